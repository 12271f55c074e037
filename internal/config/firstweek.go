package config

// FirstWeek are the settings a user changes in the first week, the ones
// the README shows, in this order; every other variable is derived from these (the time
// budget from REQUEST_TIMEOUT, the TTL chain from the TTLs that were set)
// or advanced, listed in docs/configuration.md. docs_test.go keeps that
// page in step with .env.example and this list.
var FirstWeek = []string{
	"DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "ADMIN_ADDR", "ADMIN_TOKEN",
	"API_KEYS", "CACHE_SIGNING_KEY", "TRUSTED_PROXIES", "REQUEST_TIMEOUT", "CACHE_MODE",
	"CACHE_TTL", "CACHE_SOFT_TTL", "HOT_KEYS", "STATIC_KEYS", "RATE_LIMIT",
	"DB_MAIN_MAX_CONNS", "DB_REPORTS_MAX_CONNS", "EXPECTED_INSTANCES", "SHUTDOWN_DRAIN_DELAY", "LOG_LEVEL",
}
