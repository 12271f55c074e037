#!/usr/bin/env bash
# security.sh (`make security`): gosec against a reviewed baseline, then
# govulncheck.
#
# gosec scans what ships and what people copy: every package of this module
# the binary is built from (`go list -deps .`, so a new package is scanned
# the day the binary imports it, wherever it lives, internal/ included),
# plus the client and its examples. The test harnesses (internal/testkit)
# and tools/ are not in the binary and are not scanned
# (tools/scripts/gosec-baseline.txt says why); tools/checks/security_test.go
# holds the scanned set to the binary's. `security.sh --packages` prints
# it. A finding fails the run: fix it, or, if it is a false positive,
# annotate the line `// #nosec Gxxx -- reason` AND list it in the baseline.
# The baseline is checked against the annotations in the code, so neither can
# change without the other: every accepted finding is on record, reviewed.
#
# govulncheck needs the vulnerability database (VULNDB, default
# https://vuln.go.dev). When it cannot be reached the check prints one line
# saying so and is skipped (exit 0): an offline machine is not a vulnerable
# one, and the line keeps the gap visible in CI logs.
set -uo pipefail

cd "$(dirname "$0")/../.."

GO=${GO:-go}
GOSEC=${GOSEC:-github.com/securego/gosec/v2/cmd/gosec@v2.30.0}
GOVULNCHECK=${GOVULNCHECK:-golang.org/x/vuln/cmd/govulncheck@v1.9.0}
VULNDB=${VULNDB:-https://vuln.go.dev}
BASELINE=tools/scripts/gosec-baseline.txt

status=0

# The directories to scan, from the repository root ("." is the main
# package): this module's packages among the binary's dependencies and
# the client's.
module=$("$GO" list -m) || exit 1
scanned=$("$GO" list -deps -f '{{if .Module}}{{if .Module.Main}}{{.ImportPath}}{{end}}{{end}}' . ./client/...) || exit 1
scanned=$(echo "$scanned" | sed -E "s|^$module(/\|$)|./|; s|^\./$|.|" | sort -u)
if [ "${1:-}" = --packages ]; then
	echo "$scanned"
	exit 0
fi
mapfile -t dirs <<<"$scanned"

echo "gosec ($GOSEC), ${#dirs[@]} packages"
if ! "$GO" run "$GOSEC" -quiet "${dirs[@]}"; then
	echo "gosec: findings above: fix each, or annotate a false positive '// #nosec Gxxx -- reason' and add it to $BASELINE"
	status=1
fi

# "path rule" for each annotation in the scanned packages' files, and each
# line of the baseline.
annotated=$(for d in "${dirs[@]}"; do grep -noE '#nosec G[0-9]+' "$d"/*.go /dev/null; done |
	sed -E 's|^\./||; s|^([^:]+):[0-9]+:#nosec (G[0-9]+)$|\1 \2|' | sort)
listed=$(grep -vE '^[[:space:]]*(#|$)' "$BASELINE" | awk '{print $1, $2}' | sort)
if [ "$annotated" != "$listed" ]; then
	echo "gosec: the #nosec annotations and $BASELINE differ (< in the code only, > in the baseline only):"
	diff <(echo "$annotated") <(echo "$listed") | grep '^[<>]'
	status=1
else
	echo "gosec: the $(echo "$listed" | grep -c .) accepted false positives are each annotated and in $BASELINE"
fi

echo "govulncheck ($GOVULNCHECK, database $VULNDB)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$GO" run "$GOVULNCHECK" -db "$VULNDB" ./... >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q 'fetching vulnerabilities' "$out"; then
	echo "govulncheck: SKIPPED, the vulnerability database $VULNDB could not be reached; run make security where it can be, or set VULNDB to a mirror ($(grep 'fetching vulnerabilities' "$out" | tail -1))"
elif [ $rc -ne 0 ]; then
	cat "$out"
	echo "govulncheck: failed (exit $rc): see above"
	status=1
else
	grep -v '^go: downloading' "$out"
fi

exit $status
