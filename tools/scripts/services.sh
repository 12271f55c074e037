#!/usr/bin/env bash
# services.sh: make sure PostgreSQL and Redis answer before the tests run.
#
# Reads DATABASE_URL and REDIS_URL (the Makefile sets local defaults). For
# each server that does not answer (pg_isready / redis-cli ping, or a TCP
# connect to host:port when those clients are not installed): if Docker works
# and the URL points at this machine's default port, start that service with
# docker compose; otherwise print ONE line saying what is missing and how to
# start it, and exit 1.
set -euo pipefail

cd "$(dirname "$0")/../.."

DATABASE_URL=${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/stampede?sslmode=disable}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}

# hostport URL DEFAULT_PORT -> prints "host port"
hostport() {
	local rest=${1#*://}
	rest=${rest%%/*}
	rest=${rest%%\?*}
	rest=${rest##*@}
	local host port=$2
	if [[ $rest == \[* ]]; then # [::1]:5432
		host=${rest#\[}
		host=${host%%\]*}
		[[ $rest == *\]:* ]] && port=${rest##*\]:}
	else
		host=${rest%%:*}
		[[ $rest == *:* ]] && port=${rest##*:}
	fi
	echo "${host:-127.0.0.1} ${port:-$2}"
}

# with_timeout SECS CMD...: run CMD, killed after SECS where timeout(1) exists.
with_timeout() {
	local secs=$1
	shift
	if command -v timeout >/dev/null 2>&1; then
		timeout "$secs" "$@"
	else
		"$@"
	fi
}

# listening HOST PORT: true when a TCP connection succeeds within 2s.
listening() {
	with_timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

# postgres_up / redis_up ask the server itself when its client is installed
# (a bare TCP connect can be accepted by a proxy), else try a TCP connect.
postgres_up() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 2 -d "$DATABASE_URL" >/dev/null 2>&1
	else
		listening "$pg_host" "$pg_port"
	fi
}
redis_up() {
	if command -v redis-cli >/dev/null 2>&1; then
		[[ $(with_timeout 3 redis-cli -u "$REDIS_URL" ping 2>/dev/null) == PONG ]]
	else
		listening "$rd_host" "$rd_port"
	fi
}

# addr HOST PORT: host:port, with brackets around an IPv6 host.
addr() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; }

is_local() { [[ $1 == 127.0.0.1 || $1 == localhost || $1 == ::1 ]]; }

read -r pg_host pg_port < <(hostport "$DATABASE_URL" 5432)
read -r rd_host rd_port < <(hostport "$REDIS_URL" 6379)

missing=()  # compose service names
problems=() # one phrase per missing service
startable=true
if ! postgres_up; then
	missing+=(postgres)
	problems+=("PostgreSQL at $(addr "$pg_host" "$pg_port") (DATABASE_URL): start it with 'docker compose up -d --wait postgres' or 'pg_ctlcluster <version> main start', or set DATABASE_URL")
	{ is_local "$pg_host" && [[ $pg_port == 5432 ]]; } || startable=false
fi
if ! redis_up; then
	missing+=(redis)
	problems+=("Redis at $(addr "$rd_host" "$rd_port") (REDIS_URL): start it with 'docker compose up -d --wait redis' or 'redis-server --daemonize yes', or set REDIS_URL")
	{ is_local "$rd_host" && [[ $rd_port == 6379 ]]; } || startable=false
fi

[[ ${#missing[@]} -eq 0 ]] && exit 0

if $startable && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	echo "services.sh: starting ${missing[*]} with docker compose" >&2
	docker compose up -d --wait "${missing[@]}"
	exit 0
fi

msg=$(printf '%s; ' "${problems[@]}")
echo "services.sh: not reachable: ${msg%; }" >&2
exit 1
