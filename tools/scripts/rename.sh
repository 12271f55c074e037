#!/usr/bin/env bash
# rename.sh NEW_MODULE: make this clone your own service. Rewrites the
# module path github.com/stampede-guard/api (and the checks module's,
# .../tools/checks) to NEW_MODULE in every tracked file, so the copy builds,
# tests and imports under its new name. Run it once, from a clone:
#
#	make rename MODULE=github.com/you/shop
#
# (gonew cannot do this from a clone: it fetches from the module proxy, and
# module zips leave nested modules such as tools/checks out.)
set -euo pipefail

cd "$(dirname "$0")/../.."

old=github.com/stampede-guard/api
new=${1:-}
if [[ -z $new || $new == -* ]]; then
	echo "usage: $0 NEW_MODULE   (e.g. github.com/you/shop)" >&2
	exit 2
fi
if [[ ! $new =~ ^[A-Za-z0-9._~/-]+$ || $new == */ || $new == /* ]]; then
	echo "rename: $new is not a module path (letters, digits, . _ ~ - and /)" >&2
	exit 2
fi
if [[ $(sed -n 's/^module //p' go.mod) != "$old" ]]; then
	echo "rename: go.mod's module is not $old: already renamed?" >&2
	exit 1
fi

# Every tracked text file that names the old path (grep -I skips binaries),
# but this script and its test, which must keep naming it.
mapfile -t files < <(git ls-files -z -- . ':!tools/scripts/rename.sh' ':!tools/checks/rename_test.go' |
	xargs -0 grep -Il -- "$old" || true)
for f in "${files[@]}"; do
	sed -i.bak "s#${old//./\\.}#${new}#g" "$f" && rm -f "$f.bak"
done
echo "rename: $old -> $new in ${#files[@]} files; now run: go mod tidy && make test"
