# stampede-guard. `make test` needs PostgreSQL and Redis (and Debian's redis-server,
# from which the tests start a local Redis Cluster themselves): it uses the ones
# below (override from the environment), or starts them with docker compose.
DATABASE_URL ?= postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable
REDIS_URL ?= redis://127.0.0.1:6379/0
export DATABASE_URL REDIS_URL

GO ?= go

.PHONY: build run test vet bench lint services lab fuzz

build:
	$(GO) build -o bin/api .

run: build services
	./bin/api

test: services
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

# Fuzz the id, ETag, bearer-token and JSON-body parsers, FUZZTIME each (their
# seed corpora already run as plain tests in `make test`).
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalInt$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzSplitETags$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzProductBody$$' -fuzztime $(FUZZTIME) ./handlers
	$(GO) test -run '^$$' -fuzz '^FuzzBearer$$' -fuzztime $(FUZZTIME) ./middleware

bench: services
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The lab: N instances of bin/api as separate processes on these PostgreSQL
# and Redis (logical database 10), a delayed TCP proxy on the database link,
# the course's experiments and their before/after tables (about 2-3 minutes).
lab: build services
	$(GO) run ./lab -out lab-results -pg "$(DATABASE_URL)" -redis "$(REDIS_URL)"

# gofmt, go vet and staticcheck (fetched from the module proxy on first use).
lint: vet
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Checks that PostgreSQL and Redis answer; starts them with docker compose
# when Docker works, else fails with one line saying what to start.
services:
	@bash scripts/services.sh
