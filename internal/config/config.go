package config

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
)

// Config is everything the app reads from the environment. Defaults match
// docker-compose.yml and .env.example (envexample_test.go holds them to it);
// only this package knows the variable names.
type Config struct {
	HTTPAddr     string
	AdminAddr    string // "off" disables the admin listener
	AdminAddrSet bool   // set by the user: a busy address is an error, not a fallback
	MetricsAddr  string // "": /metrics on HTTP_ADDR; else its own listener
	DatabaseURL  string
	RedisURL     string
	RedisDB      int // the logical database of REDIS_URL
	// CacheNamespace prefixes every Redis key, lock, limit counter and
	// channel ("<ns>:…"), keeping two apps on one Redis server apart.
	CacheNamespace string
	CacheMode      cache.Mode
	CacheTTL       time.Duration
	CacheSoftTTL   time.Duration
	CacheNegTTL    time.Duration
	LockTTL        time.Duration
	LockWait       time.Duration
	LockWatchdog   bool
	LockWaiter     cache.Waiter // LOCK_WAITER: wait, fail or load
	DrainDelay     time.Duration
	L1TTL          time.Duration
	L1Tracking     bool               // L1_INVALIDATION=tracking: Redis CLIENT TRACKING, not pub/sub
	HTTPCache      handlers.HTTPCache // Cache-Control of product reads
	// HTTPMaxAgeAsked is an HTTP_MAX_AGE set longer than the cache keeps
	// a product fresh, which HTTPCache.MaxAge is capped to (logged at
	// start); 0 otherwise.
	HTTPMaxAgeAsked  time.Duration
	L1Size           int
	L1OutageTTL      time.Duration // L1_OUTAGE_TTL: how long a value loaded during a Redis outage is held; 0 = off
	XFetchBeta       float64
	HotKeyCopies     int
	TTLJitter        float64 // fraction of a TTL cut at random, so keys expire apart
	RateLimit        string  // "off" or ulule format
	RateLimitLease   float64 // RATE_LIMIT_LEASE: share of a limit an instance leases at a time
	TrustedProxies   []string
	ShedMaxWaiting   int
	Admission        db.Admission // ADMISSION: deadline (predicted wait vs deadline) or queue (SHED_MAX_WAITING only)
	LimitCritical    int
	LimitNormal      int
	LimitLow         int
	BreakerFailures  int
	BreakerOpenMin   time.Duration // first probe after a breaker opens
	BreakerOpenMax   time.Duration // cap of the doubling wait between probes
	MainMaxConns     int
	ReportsMaxConns  int
	CheckoutReserved int // DB_CHECKOUT_RESERVED: >0 puts checkout ahead of queued reads (reads may still use every connection)
	// Pool sizing check at start (docs/operations.md "Pool sizing"): instances × pools + headroom
	// must fit under the server's max_connections.
	ExpectedInstances int
	PoolHeadroom      int
	StrictPoolSizing  bool
	AcquireTimeout    time.Duration
	IdleTimeout       time.Duration
	StmtTimeout       time.Duration
	RequestTimeout    time.Duration
	LoadTimeout       time.Duration // one shared load, from taking the lock
	// LockCoversDeadHolder: LOCK_WAIT outlives a dead holder's LOCK_TTL
	// plus one load, so waiters take over instead of giving up.
	LockCoversDeadHolder bool
	WriteTimeout         time.Duration
	ShutdownTimeout      time.Duration
	WarmKeys             []int64 // HOT_KEYS (SPEC's name): warmed at start, refreshed ahead of expiry
	LogLevel             string
	LogFlush             time.Duration // LOG_FLUSH_INTERVAL: access lines batched this long; 0 = one write per line
	APIKeys              []string      // API_KEYS: bearer keys with write scope, besides the api_keys table
	BodyReadTimeout      time.Duration
	BodyMinRate          int           // bytes per second; 0 = no minimum
	AdminToken           string        // ADMIN_TOKEN: required on the admin listener when set
	CacheSigningKey      []byte        // CACHE_SIGNING_KEY: HMAC key of cache entries; nil = the key kept in PostgreSQL
	RateLimitKey         string        // RATE_LIMIT_KEY: "off" or ulule format, per valid API key
	UnknownIDFilter      bool          // UNKNOWN_ID_FILTER: Bloom filter of existing product ids
	UnknownIDLookups     int           // UNKNOWN_ID_LOOKUPS: per second fleet-wide, of ids above the highest known
	RedisClusterAddrs    []string      // REDIS_CLUSTER_ADDRS: a Redis Cluster instead of REDIS_URL (redisconn.Open)
	DBPooler             db.Pooler     // DB_POOLER: PgBouncer in front of PostgreSQL (dbpooler.go)
	DatabaseDirectURL    string        // DATABASE_DIRECT_URL: PostgreSQL itself, for migrations behind a pooler
	DatabaseReadURL      string        // DATABASE_READ_URL: a read replica for the reports pool
	MigrateOnStart       bool          // run applies pending migrations before serving
	StaticKeys           []int64       // never-expiring products (config-like values)
	StaticTTL            time.Duration // their safety TTL
	StaticRepair         time.Duration // period of their repair job
	Tracing              Tracing       // OTEL_*: OpenTelemetry tracing (tracing.go), off by default
	Abuse                AbuseSettings // ORDER_MAX_QUANTITY, ORDER_RATE_LIMIT, AUTH_FAILURE_LIMIT (abuse.go)

	// HotKey is automatic hot-key detection (HOT_KEY_DETECT, _THRESHOLD,
	// _TOP, _L1_TTL; hot.go).
	HotKey HotKeySettings
}

// Load reads and checks the configuration. A malformed value or a
// broken timeout layering fails with one line naming the variable.
func Load(getenv func(string) string) (Config, error) {
	p := envParser{getenv: getenv}
	c := Config{
		HTTPAddr:          p.str("HTTP_ADDR", ":8080"),
		AdminAddr:         p.str("ADMIN_ADDR", "127.0.0.1:8081"),
		AdminAddrSet:      p.set("ADMIN_ADDR"),
		MetricsAddr:       p.str("METRICS_ADDR", ""),
		MigrateOnStart:    p.boolean("MIGRATE_ON_START", true),
		DatabaseURL:       p.str("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/stampede?sslmode=disable"),
		RedisURL:          p.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		CacheNamespace:    p.namespace("CACHE_NAMESPACE"),
		RedisClusterAddrs: p.hostPorts("REDIS_CLUSTER_ADDRS"),
		DBPooler:          db.Pooler(p.oneOf("DB_POOLER", "none", "none", "pgbouncer", "pgbouncer-prepared")),
		DatabaseDirectURL: p.str("DATABASE_DIRECT_URL", ""),
		DatabaseReadURL:   p.str("DATABASE_READ_URL", ""),
		LockWatchdog:      p.boolean("LOCK_WATCHDOG", true),
		DrainDelay:        p.durationOrZero("SHUTDOWN_DRAIN_DELAY", 0),
		L1Size:            p.positive("L1_SIZE", 10_000),
		L1OutageTTL:       p.durationOrZero("L1_OUTAGE_TTL", 30*time.Second),
		L1Tracking:        p.oneOf("L1_INVALIDATION", "pubsub", "pubsub", "tracking") == "tracking",
		XFetchBeta:        p.float("XFETCH_BETA", 1),
		HotKeyCopies:      p.atMost("HOT_KEY_COPIES", p.positive("HOT_KEY_COPIES", 1), cache.MaxCopies),
		TTLJitter:         p.fraction("TTL_JITTER", 0.1, 0.5),
		RateLimit:         p.str("RATE_LIMIT", "100-S"),
		RateLimitLease:    p.fraction("RATE_LIMIT_LEASE", 0.01, 0.2),
		TrustedProxies:    p.cidrs("TRUSTED_PROXIES"),
		ShedMaxWaiting:    p.atMost("SHED_MAX_WAITING", p.nonNegative("SHED_MAX_WAITING", 20), math.MaxInt32),
		Admission:         db.Admission(p.oneOf("ADMISSION", string(db.AdmitDeadline), string(db.AdmitDeadline), string(db.AdmitQueue))),
		LimitCritical:     p.positive("CONCURRENCY_CRITICAL", 256),
		LimitNormal:       p.positive("CONCURRENCY_NORMAL", 1024),
		LimitLow:          p.positive("CONCURRENCY_LOW", 8),
		BreakerFailures:   p.atMost("BREAKER_FAILURES", p.positive("BREAKER_FAILURES", 5), math.MaxInt32),
		MainMaxConns:      p.atMost("DB_MAIN_MAX_CONNS", p.positive("DB_MAIN_MAX_CONNS", 20), math.MaxInt32),
		ReportsMaxConns:   p.atMost("DB_REPORTS_MAX_CONNS", p.positive("DB_REPORTS_MAX_CONNS", 4), math.MaxInt32),
		ExpectedInstances: p.atMost("EXPECTED_INSTANCES", p.positive("EXPECTED_INSTANCES", 1), math.MaxInt32),
		PoolHeadroom:      p.atMost("DB_CONNS_HEADROOM", p.nonNegative("DB_CONNS_HEADROOM", 10), math.MaxInt32),
		StrictPoolSizing:  p.boolean("STRICT_POOL_SIZING", false),
		IdleTimeout:       p.duration("DB_IDLE_TIMEOUT", 30*time.Second),
		WarmKeys:          p.ids("HOT_KEYS"),
		StaticKeys:        p.ids("STATIC_KEYS"),
		StaticTTL:         p.duration("STATIC_TTL", 24*time.Hour),
		LogLevel:          p.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		LogFlush:          p.durationOrZero("LOG_FLUSH_INTERVAL", defaultLogFlush),
		APIKeys:           p.apiKeys("API_KEYS"),
		BodyMinRate:       p.nonNegative("BODY_MIN_RATE", 1024),
		AdminToken:        p.str("ADMIN_TOKEN", ""),
		UnknownIDFilter:   p.boolean("UNKNOWN_ID_FILTER", true),
		UnknownIDLookups:  p.positive("UNKNOWN_ID_LOOKUPS", 20),
	}
	layering := c.derive(&p)
	c.check(&p, layering)
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return c, errors.Join(c.checkTracking(), c.checkClusterDB(), c.checkPooler())
}

// derive reads the settings that follow from others (the time budget, the
// TTLs, the HTTP caching defaults) into c. It returns the budget's and
// the TTLs' own checks, which check appends after the guards.
func (c *Config) derive(p *envParser) (layering []error) {
	c.CacheSigningKey = signingKey(p)
	if c.LogFlush > maxLogFlush {
		p.fail("LOG_FLUSH_INTERVAL", p.getenv("LOG_FLUSH_INTERVAL"), fmt.Sprintf("must be at most %v: a killed process loses up to this much access log", maxLogFlush))
	}
	if opt, err := redis.ParseURL(c.RedisURL); err != nil {
		// go-redis repeats the URL, password and all, in its error.
		shown, why := urlError(c.RedisURL, err, func(u string) error { _, err := redis.ParseURL(u); return err })
		p.fail("REDIS_URL", shown, why)
	} else if why := checkRedisOptions(opt); why != "" {
		p.fail("REDIS_URL", hideUserinfo(c.RedisURL), why)
	} else {
		c.RedisDB = opt.DB
	}
	c.Tracing = readTracing(p)
	c.Abuse = readAbuse(p, c.RateLimit)
	c.LockWaiter, _ = cache.ParseWaiter(p.oneOf("LOCK_WAITER", "wait", "wait", "fail", "load"))
	budget := readBudget(p)
	c.RequestTimeout, c.AcquireTimeout, c.StmtTimeout = budget.Request, budget.Acquire, budget.Statement
	c.LockTTL, c.LockWait, c.WriteTimeout, c.LoadTimeout = budget.LockTTL, budget.LockWait, budget.Write, budget.Load()
	c.LockCoversDeadHolder = budget.coversDeadHolder()
	c.BodyReadTimeout = budget.Body
	ttls := readTTLs(p)
	c.CacheTTL, c.CacheSoftTTL, c.L1TTL = ttls.Hard, ttls.Soft, ttls.L1
	c.followers(p)
	c.HotKey = readHotKeys(p, ttls)
	c.BreakerOpenMin, c.BreakerOpenMax = breakerOpen(p)
	mode, err := cache.ParseMode(p.str("CACHE_MODE", string(cache.ModeSWR)))
	if err != nil {
		p.fail("CACHE_MODE", p.getenv("CACHE_MODE"), err.Error())
	}
	c.CacheMode = mode
	// A fifth of the main pool (at least 1, and below the pool, which a
	// pool of one leaves none): checkout goes first. Reads borrow it while
	// no order waits (db/admission.go mayTake).
	c.CheckoutReserved = p.nonNegative("DB_CHECKOUT_RESERVED", min(max(1, c.MainMaxConns/5), c.MainMaxConns-1))
	if p.set("DB_CHECKOUT_RESERVED") && c.CheckoutReserved >= c.MainMaxConns {
		p.fail("DB_CHECKOUT_RESERVED", p.getenv("DB_CHECKOUT_RESERVED"), fmt.Sprintf("must be below DB_MAIN_MAX_CONNS (%d), or reads get no connection", c.MainMaxConns))
	}
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
	}
	// A copy downstream never outlives the cache's own (Age makes max-age
	// − Age the entry's time left): a longer max-age only made a fresh
	// load say "Age: 31". Capped, and said at start.
	if c.HTTPCache.MaxAge > maxAge {
		c.HTTPMaxAgeAsked, c.HTTPCache.MaxAge = c.HTTPCache.MaxAge, maxAge
	}
	// A 404 is fresh for as long as the cache keeps it, and never longer
	// than a product read's max-age, set or derived.
	c.HTTPCache.NotFoundMaxAge = min(c.CacheNegTTL, c.HTTPCache.MaxAge)
	return append(budget.check(), ttls.check()...)
}

// check refuses what no setting alone shows wrong: the guards, the rate
// formats, the time budget's and the TTLs' layering (from derive), the
// static keys' repair period.
func (c *Config) check(p *envParser, layering []error) {
	checkGuards(p, *c) // trusted proxies, admin token and address (guards.go)
	p.rate("RATE_LIMIT", c.RateLimit, "100-S")
	p.rate("RATE_LIMIT_KEY", c.RateLimitKey, "1000-S")
	p.postgresURL("DATABASE_URL", c.DatabaseURL)
	p.postgresURL("DATABASE_DIRECT_URL", c.DatabaseDirectURL)
	p.postgresURL("DATABASE_READ_URL", c.DatabaseReadURL)
	p.errs = append(p.errs, layering...)
	if c.StaticRepair >= c.StaticTTL {
		p.errs = append(p.errs, fmt.Errorf("config: STATIC_REPAIR_PERIOD=%s must be shorter than STATIC_TTL=%s, or static keys expire between repairs; change one of them",
			c.StaticRepair, c.StaticTTL))
	}
}

// postgresURL checks a PostgreSQL connection string as pgx reads it: the
// pool's own error came at start, as "db main: parse url", naming no
// variable. Its message hides the password only up to a first "@" in it:
// urlError keeps all of it out.
func (p *envParser) postgresURL(name, v string) {
	if v == "" {
		return
	}
	if _, err := pgconn.ParseConfig(v); err != nil {
		_, why := urlError(v, err, func(u string) error { _, err := pgconn.ParseConfig(u); return err })
		p.errs = append(p.errs, fmt.Errorf("config: %s: %s (want postgres://user:password@host:5432/db?sslmode=disable)", name, why))
	}
}

// The access log is batched (internal/logbuf): defaultLogFlush keeps it a
// tenth of a second behind at most, maxLogFlush bounds what a killed
// process can lose.
const (
	defaultLogFlush = 100 * time.Millisecond
	maxLogFlush     = 10 * time.Second
)
