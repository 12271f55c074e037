#!/usr/bin/env bash
# k6.sh: run the k6 scripts of tools/loadtest with their thresholds enforced.
#
# For each script (K6_SCRIPTS, default "stampede overload mixed"), either
# against a running instance (BASE_URL set: nothing is started, the app's
# settings are yours) or against bin/api started here with the settings the
# script's README row names, on DATABASE_URL and REDIS_URL, with a cache
# namespace of its own (CACHE_NAMESPACE=k6-<run>-<script>:) so every run
# starts on an empty cache, and stopped when the script ends. k6 prints its
# summary; a broken threshold (k6 exits 99) or any other k6 error fails the
# target, after every script has run.
#
# Knobs: K6 (the k6 binary, default `k6` on PATH; the template does not ship
# or build it), K6_DURATION (passed to every script as -e DURATION, for a
# short smoke run), K6_APP_ENV (extra NAME=value settings for the started
# app, after the script's own, e.g. the unprotected demo's CACHE_MODE=naive),
# K6_PORT (default 18080).
set -euo pipefail

cd "$(dirname "$0")/../.."

K6=${K6:-k6}
K6_SCRIPTS=${K6_SCRIPTS:-stampede overload mixed}
K6_PORT=${K6_PORT:-18080}
GO=${GO:-go}

if ! command -v "$K6" >/dev/null 2>&1; then
	echo "k6: no k6 binary (K6=$K6): install k6 (see tools/loadtest/README.md) or point K6 at one" >&2
	exit 1
fi

# settings SCRIPT: the app's settings that make SCRIPT interesting (the
# table in tools/loadtest/README.md). RATE_LIMIT=off for all: k6 on one
# machine is one client IP.
settings() {
	case $1 in
	stampede) echo "RATE_LIMIT=off CACHE_SOFT_TTL=2s" ;;
	overload) echo "RATE_LIMIT=off SHED_MAX_WAITING=4 DB_MAIN_MAX_CONNS=4 DB_REPORTS_MAX_CONNS=2" ;;
	mixed) echo "RATE_LIMIT=off CACHE_SOFT_TTL=5s API_KEYS=${API_KEY:-demo-write-key-change-me}" ;;
	*) echo "k6: unknown script $1 (tools/loadtest/$1.js)" >&2 && return 1 ;;
	esac
}

for script in $K6_SCRIPTS; do
	settings "$script" >/dev/null
	[[ -f tools/loadtest/$script.js ]] || { echo "k6: no tools/loadtest/$script.js" >&2 && exit 1; }
done

app_pid=""
app_log=""
stop_app() {
	if [[ -n $app_pid ]]; then
		kill "$app_pid" 2>/dev/null || true
		wait "$app_pid" 2>/dev/null || true
		app_pid=""
	fi
}
trap stop_app EXIT

# start_app SCRIPT: bin/api on 127.0.0.1:K6_PORT with SCRIPT's settings;
# returns once /readyz answers 200 (or fails with the app's log).
start_app() {
	local addr="127.0.0.1:$K6_PORT" run
	if (exec 3<>"/dev/tcp/127.0.0.1/$K6_PORT") 2>/dev/null; then
		echo "k6: 127.0.0.1:$K6_PORT is taken; set K6_PORT, or BASE_URL to use what runs there" >&2
		return 1
	fi
	run=$(date +%s)
	app_log=$(mktemp -t "k6-$1-api.XXXXXX")
	# shellcheck disable=SC2046 # the settings are NAME=value words
	env $(settings "$1") ${K6_APP_ENV:-} HTTP_ADDR="$addr" ADMIN_ADDR= METRICS_ADDR= \
		CACHE_NAMESPACE="k6-$run-$1" ./bin/api >"$app_log" 2>&1 &
	app_pid=$!
	for _ in $(seq 1 600); do # up to 60 s: migrations run first
		if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz") == 200 ]]; then
			echo "k6: bin/api ready on $addr with $(settings "$1")${K6_APP_ENV:+ $K6_APP_ENV} (log: $app_log)"
			return 0
		fi
		if ! kill -0 "$app_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "k6: bin/api did not become ready on $addr; its log:" >&2
	tail -n 20 "$app_log" >&2
	stop_app
	return 1
}

if [[ -z ${BASE_URL:-} ]]; then
	"$GO" build -o bin/api .
	# As `make run` does: on a fresh machine DATABASE_URL's database does
	# not exist yet, and the app (rightly) does not create it at start.
	./bin/api createdb
fi

status=0
results=()
for script in $K6_SCRIPTS; do
	base=${BASE_URL:-}
	if [[ -z $base ]]; then
		if ! start_app "$script"; then
			status=1
			results+=("$script: app did not start")
			continue
		fi
		base="http://127.0.0.1:$K6_PORT"
	fi
	args=(run -e "BASE_URL=$base")
	[[ -n ${K6_DURATION:-} ]] && args+=(-e "DURATION=$K6_DURATION")
	echo "k6: $K6 ${args[*]} tools/loadtest/$script.js"
	rc=0
	# K6_DURATION is this script's knob, but k6 reads K6_* from its
	# environment as its own options: K6_DURATION there replaces every
	# scenario with one VU looping `default` (overload.js, which has none,
	# fails; the others ran one VU instead of their load). Hide it from k6.
	env -u K6_DURATION "$K6" "${args[@]}" "tools/loadtest/$script.js" || rc=$?
	stop_app
	case $rc in
	0) results+=("$script: thresholds passed") ;;
	99) results+=("$script: THRESHOLDS FAILED") ;;
	*) results+=("$script: k6 exited $rc") ;;
	esac
	if ((rc != 0 && status == 0)); then
		status=$rc
	fi
done

echo "k6: $(printf '%s; ' "${results[@]}" | sed 's/; $//')"
exit "$status"
