# stampede-guard. `make test` needs PostgreSQL and Redis (and Debian's redis-server,
# from which the tests start a local Redis Cluster themselves): it uses the ones
# below (override from the environment), or starts them with docker compose.
# `make help` lists the targets: each one's `## comment` is its help line.
# The app's own database; the tests and the lab only use its server, where
# they create (and drop) databases of their own.
DATABASE_URL ?= postgres://postgres:postgres@127.0.0.1:5432/stampede?sslmode=disable
REDIS_URL ?= redis://127.0.0.1:6379/0
export DATABASE_URL REDIS_URL

GO ?= go
# Checks left out for a missing optional tool (pgbouncer, Chromium) append
# their names here; `make test` prints them as its last line. The k6 scripts
# are always named there: they are load runs of a minute or more each, run
# by `make k6`, not by `make test`.
SKIPPED_CHECKS_FILE := $(CURDIR)/bin/skipped-checks
export SKIPPED_CHECKS_FILE

.DEFAULT_GOAL := build
.PHONY: help build run test vet bench lint services lab lab-scale soak fuzz security k6 rename

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/api
	$(GO) build -o bin/api .

# The write key of the README's curl tour (compose sets the same one); set
# API_KEYS to your own, or make keys with `bin/api keys create`.
API_KEYS ?= demo-write-key-change-me
run: build services ## build, create the app's database if missing, and serve on :8080
	./bin/api createdb
	API_KEYS="$(API_KEYS)" ./bin/api

# The app's module, then the checks module (compose, Dockerfile, Grafana,
# k6, CI workflow). Both always run; the exit status is the first failure's.
# The last line names every optional check that was left out.
test: services ## run every test (real PostgreSQL and Redis; -race)
	@mkdir -p bin && echo "k6 load scripts (make k6 runs them)" >$(SKIPPED_CHECKS_FILE)
	@status=0; \
	$(GO) test -race -count=1 ./... || status=$$?; \
	(cd tools/checks && $(GO) test -race -count=1 ./...) || status=$$?; \
	if [ -s $(SKIPPED_CHECKS_FILE) ]; then \
		echo "optional checks left out: $$(sort -u $(SKIPPED_CHECKS_FILE) | paste -sd ';' - | sed 's/;/; /g')"; \
	else \
		echo "optional checks left out: none"; \
	fi; \
	exit $$status

vet: ## go vet both modules
	$(GO) vet ./...
	cd tools/checks && $(GO) vet ./...

# Fuzz the id, ETag, bearer-token and JSON-body parsers and the cache entry's
# decoder, FUZZTIME each (their seed corpora already run as plain tests in
# `make test`).
FUZZTIME ?= 10s
fuzz: ## fuzz the request parsers and the cache entry's decoder for FUZZTIME each (default 10s)
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalInt$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzSplitETags$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzProductBody$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzBearer$$' -fuzztime $(FUZZTIME) ./middleware
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./cache

# gosec (pinned, fetched from the module proxy on first use) over the app,
# its packages, the client and the examples, against the reviewed baseline of
# accepted findings (tools/scripts/gosec-baseline.txt: every `#nosec` in the code
# is listed there, and only those); then govulncheck, which prints one line
# and is skipped when its database (VULNDB, default https://vuln.go.dev)
# cannot be reached.
security: ## gosec against its reviewed baseline, and govulncheck (skipped with one line when offline)
	@GO="$(GO)" bash tools/scripts/security.sh

bench: services ## run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The lab: N instances of bin/api as separate processes on these PostgreSQL
# and Redis (logical database 10), a delayed TCP proxy on the database link,
# the course's experiments and their before/after tables (about 2-3 minutes).
# Every experiment on 5 instances, then the cold-key stampede on 20.
lab: build services ## run the lab's experiments (Redis db 10: empty, or the lab's own)
	$(GO) run ./tools/lab -out lab-results -pg "$(DATABASE_URL)" -redis "$(REDIS_URL)"
	$(GO) run ./tools/lab -only cold-key -instances 20 -per-instance 10 -out lab-results/20-instances -pg "$(DATABASE_URL)" -redis "$(REDIS_URL)"

# The catalogue experiment up to 10 million products (seeding them takes a
# minute or two, so the default lab stops at a million).
lab-scale: build services ## the catalogue experiment at 1 000, 1 000 000 and 10 000 000 products
	$(GO) run ./tools/lab -only catalogue -catalogue 1000,1000000,10000000 -out lab-results/scale -pg "$(DATABASE_URL)" -redis "$(REDIS_URL)"

# The soak (docs/operations.md, "Soak"): three instances of bin/api under a
# mixed open-loop load (hot and cold reads, lists, writes, orders with
# Idempotency-Key, reports) while faults rotate (database latency, resets
# and a restart stand-in, Redis down, an instance SIGKILLed and restarted);
# a per-minute table, soak-results/soak.svg, and a verdict that fails on a
# 5xx other than 503, an unanswered request, a lost or duplicated order, or
# RSS, goroutines or fds still climbing in the second half. CI runs SOAK=3m.
SOAK ?= 30m
soak: build services ## soak 3 instances under mixed load and rotating faults for SOAK (default 30m)
	$(GO) run ./tools/lab -soak $(SOAK) -out soak-results -pg "$(DATABASE_URL)" -redis "$(REDIS_URL)"

# The k6 scripts of tools/loadtest, each against bin/api started with the
# settings its README row names (on an empty cache of its own), or against
# BASE_URL when set; thresholds enforced, k6's summary printed. Needs a k6
# binary (K6=path, default k6 on PATH): the template does not ship one.
# K6_SCRIPTS picks scripts, K6_DURATION shortens each (a smoke run).
k6: services ## run the k6 scripts with their thresholds (needs k6; BASE_URL for a running instance)
	@GO="$(GO)" bash tools/scripts/k6.sh

# gofmt, go vet and staticcheck (fetched from the module proxy on first use).
lint: vet ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Checks that PostgreSQL and Redis answer; starts them with docker compose
# when Docker works, else fails with one line saying what to start.
services: ## check PostgreSQL and Redis answer (start them with docker compose if possible)
	@bash tools/scripts/services.sh

# Make the clone your own: rewrites the module path in every tracked file.
rename: ## rename the module: make rename MODULE=github.com/you/shop
	@test -n "$(MODULE)" || { echo "usage: make rename MODULE=github.com/you/shop"; exit 2; }
	@bash tools/scripts/rename.sh "$(MODULE)"
