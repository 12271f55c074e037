package main

import (
	"fmt"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/handlers"
	limiter "github.com/ulule/limiter/v3"
)

// config is everything run reads from the environment. Defaults match
// docker-compose.yml and .env.example; only this file knows the variable names.
type config struct {
	HTTPAddr        string
	AdminAddr       string // "off" disables the admin listener
	DatabaseURL     string
	RedisURL        string
	CacheMode       cache.Mode
	CacheTTL        time.Duration
	CacheSoftTTL    time.Duration
	CacheNegTTL     time.Duration
	LockTTL         time.Duration
	LockWait        time.Duration
	LockWatchdog    bool
	LockFailFast    bool // LOCK_WAITER=fail
	DrainDelay      time.Duration
	L1TTL           time.Duration
	L1Tracking      bool               // L1_INVALIDATION=tracking: Redis CLIENT TRACKING, not pub/sub
	HTTPCache       handlers.HTTPCache // Cache-Control of product reads
	L1Size          int
	XFetchBeta      float64
	HotKeyCopies    int
	RateLimit       string // "off" or ulule format
	TrustedProxies  []string
	ShedMaxWaiting  int
	LimitCritical   int
	LimitNormal     int
	LimitLow        int
	BreakerFailures int
	BreakerOpen     time.Duration
	MainMaxConns    int
	ReportsMaxConns int
	// Pool sizing check at start (SPEC §2.3): instances × pools + headroom
	// must fit under the server's max_connections.
	ExpectedInstances int
	PoolHeadroom      int
	StrictPoolSizing  bool
	AcquireTimeout    time.Duration
	IdleTimeout       time.Duration
	StmtTimeout       time.Duration
	RequestTimeout    time.Duration
	WriteTimeout      time.Duration
	ShutdownTimeout   time.Duration
	HotKeys           []int64
	StaticKeys        []int64       // never-expiring products (config-like values)
	StaticTTL         time.Duration // their safety TTL
	StaticRepair      time.Duration // period of their repair job
	LogLevel          string
}

// loadConfig reads and checks the configuration. A malformed value or a
// broken timeout layering fails with one line naming the variable.
func loadConfig(getenv func(string) string) (config, error) {
	p := envParser{getenv: getenv}
	c := config{
		HTTPAddr:          p.str("HTTP_ADDR", ":8080"),
		AdminAddr:         p.str("ADMIN_ADDR", "127.0.0.1:8081"),
		DatabaseURL:       p.str("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		RedisURL:          p.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		CacheTTL:          p.duration("CACHE_TTL", 10*time.Minute),
		CacheSoftTTL:      p.duration("CACHE_SOFT_TTL", 30*time.Second),
		CacheNegTTL:       p.duration("CACHE_NEGATIVE_TTL", 30*time.Second),
		LockTTL:           p.duration("LOCK_TTL", 5*time.Second),
		LockWait:          p.duration("LOCK_WAIT", 2*time.Second),
		LockWatchdog:      p.boolean("LOCK_WATCHDOG", true),
		LockFailFast:      p.oneOf("LOCK_WAITER", "wait", "wait", "fail") == "fail",
		DrainDelay:        p.durationOrZero("SHUTDOWN_DRAIN_DELAY", 0),
		L1TTL:             p.durationOrZero("L1_TTL", time.Second),
		L1Size:            p.positive("L1_SIZE", 10_000),
		L1Tracking:        p.oneOf("L1_INVALIDATION", "pubsub", "pubsub", "tracking") == "tracking",
		XFetchBeta:        p.float("XFETCH_BETA", 1),
		HotKeyCopies:      p.positive("HOT_KEY_COPIES", 1),
		RateLimit:         p.str("RATE_LIMIT", "100-S"),
		TrustedProxies:    p.cidrs("TRUSTED_PROXIES"),
		ShedMaxWaiting:    p.positive("SHED_MAX_WAITING", 20),
		LimitCritical:     p.positive("CONCURRENCY_CRITICAL", 256),
		LimitNormal:       p.positive("CONCURRENCY_NORMAL", 1024),
		LimitLow:          p.positive("CONCURRENCY_LOW", 8),
		BreakerFailures:   p.positive("BREAKER_FAILURES", 5),
		BreakerOpen:       p.duration("BREAKER_OPEN_TIMEOUT", 5*time.Second),
		MainMaxConns:      p.positive("DB_MAIN_MAX_CONNS", 20),
		ReportsMaxConns:   p.positive("DB_REPORTS_MAX_CONNS", 4),
		ExpectedInstances: p.positive("EXPECTED_INSTANCES", 1),
		PoolHeadroom:      p.nonNegative("DB_CONNS_HEADROOM", 10),
		StrictPoolSizing:  p.boolean("STRICT_POOL_SIZING", false),
		AcquireTimeout:    p.duration("DB_ACQUIRE_TIMEOUT", 2*time.Second),
		IdleTimeout:       p.duration("DB_IDLE_TIMEOUT", 30*time.Second),
		StmtTimeout:       p.duration("DB_STATEMENT_TIMEOUT", 3*time.Second),
		RequestTimeout:    p.duration("REQUEST_TIMEOUT", 5*time.Second),
		WriteTimeout:      p.duration("HTTP_WRITE_TIMEOUT", 10*time.Second),
		ShutdownTimeout:   p.duration("SHUTDOWN_TIMEOUT", 10*time.Second),
		HotKeys:           p.ids("HOT_KEYS"),
		StaticKeys:        p.ids("STATIC_KEYS"),
		StaticTTL:         p.duration("STATIC_TTL", 24*time.Hour),
		StaticRepair:      p.duration("STATIC_REPAIR_PERIOD", time.Minute),
		LogLevel:          p.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
	}
	mode, err := cache.ParseMode(p.str("CACHE_MODE", string(cache.ModeSWR)))
	if err != nil {
		p.fail("CACHE_MODE", getenv("CACHE_MODE"), err.Error())
	}
	c.CacheMode = mode
	// What browsers and CDNs are told defaults to what the cache itself
	// does: in swr mode fresh for the soft TTL, then stale up to the hard
	// TTL; in the other modes fresh until the hard TTL, never stale. Age
	// counts from the load, so max-age must match the cache's own freshness.
	maxAge, swr := c.CacheTTL, time.Duration(0)
	if c.CacheMode == cache.ModeSWR {
		maxAge, swr = c.CacheSoftTTL, max(0, c.CacheTTL-c.CacheSoftTTL)
	}
	c.HTTPCache = handlers.HTTPCache{
		Enabled:              p.boolean("HTTP_CACHE", true),
		MaxAge:               p.durationOrZero("HTTP_MAX_AGE", maxAge),
		StaleWhileRevalidate: p.durationOrZero("HTTP_STALE_WHILE_REVALIDATE", swr),
		StaleIfError:         p.durationOrZero("HTTP_STALE_IF_ERROR", c.CacheTTL),
		NotFoundMaxAge:       min(c.CacheNegTTL, maxAge),
	}
	if c.RateLimit != "off" {
		if _, err := limiter.NewRateFromFormatted(c.RateLimit); err != nil {
			p.fail("RATE_LIMIT", c.RateLimit, `want "off" or N-S, N-M, N-H, N-D (e.g. 100-S)`)
		}
	}
	if p.err != nil {
		return config{}, p.err
	}
	return c, c.checkLayers()
}

// checkLayers enforces SPEC §2.3: every inner timeout is shorter than the one
// outside it, so an inner failure is reported before an outer one fires.
func (c config) checkLayers() error {
	rules := []struct {
		ok        bool
		name, msg string
	}{
		{c.StmtTimeout < c.LockTTL, "DB_STATEMENT_TIMEOUT",
			fmt.Sprintf("%s must be shorter than LOCK_TTL (%s), or a slow query outlives its lock", c.StmtTimeout, c.LockTTL)},
		{c.AcquireTimeout+c.StmtTimeout <= c.RequestTimeout, "REQUEST_TIMEOUT",
			fmt.Sprintf("%s must be at least DB_ACQUIRE_TIMEOUT + DB_STATEMENT_TIMEOUT (%s)", c.RequestTimeout, c.AcquireTimeout+c.StmtTimeout)},
		{c.LockWait < c.RequestTimeout, "LOCK_WAIT",
			fmt.Sprintf("%s must be shorter than REQUEST_TIMEOUT (%s)", c.LockWait, c.RequestTimeout)},
		{c.RequestTimeout < c.WriteTimeout, "HTTP_WRITE_TIMEOUT",
			fmt.Sprintf("%s must be longer than REQUEST_TIMEOUT (%s), or the server cuts answers the handler still writes", c.WriteTimeout, c.RequestTimeout)},
		{c.CacheSoftTTL < c.CacheTTL, "CACHE_SOFT_TTL",
			fmt.Sprintf("%s must be shorter than CACHE_TTL (%s), the hard expiry", c.CacheSoftTTL, c.CacheTTL)},
		{c.L1TTL < c.CacheSoftTTL, "L1_TTL",
			fmt.Sprintf("%s must be shorter than CACHE_SOFT_TTL (%s), or L1 hides refreshes", c.L1TTL, c.CacheSoftTTL)},
		{c.StaticRepair < c.StaticTTL, "STATIC_REPAIR_PERIOD",
			fmt.Sprintf("%s must be shorter than STATIC_TTL (%s), or static keys expire between repairs", c.StaticRepair, c.StaticTTL)},
	}
	for _, r := range rules {
		if !r.ok {
			return fmt.Errorf("config: %s: %s", r.name, r.msg)
		}
	}
	return nil
}
