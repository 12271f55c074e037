package config

// FirstWeek are the settings a user changes in the first week, the ones
// the README shows; every other variable is derived from these (the time
// budget from REQUEST_TIMEOUT, the TTL chain from the TTLs that were set)
// or advanced, listed in docs/configuration.md. docs_test.go keeps that
// page in step with .env.example and this list.
var FirstWeek = []string{
	"HTTP_ADDR", "DATABASE_URL", "REDIS_URL", "API_KEYS", "ADMIN_ADDR",
	"CACHE_MODE", "CACHE_TTL", "CACHE_SOFT_TTL", "L1_TTL", "HOT_KEYS",
	"REQUEST_TIMEOUT", "DB_ACQUIRE_TIMEOUT", "DB_STATEMENT_TIMEOUT", "LOCK_TTL", "LOCK_WAIT",
	"DB_MAIN_MAX_CONNS", "DB_REPORTS_MAX_CONNS", "SHED_MAX_WAITING", "RATE_LIMIT", "TRUSTED_PROXIES",
}
