package app

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	limiter "github.com/ulule/limiter/v3"
)

// config is everything run reads from the environment. Defaults match
// docker-compose.yml and .env.example; only this file knows the variable names.
type config struct {
	HTTPAddr     string
	AdminAddr    string // "off" disables the admin listener
	AdminAddrSet bool   // set by the user: a busy address is an error, not a fallback
	MetricsAddr  string // "": /metrics on HTTP_ADDR; else its own listener
	DatabaseURL  string
	RedisURL     string
	RedisDB      int // the logical database of REDIS_URL
	// CacheNamespace prefixes every Redis key, lock, limit counter and
	// channel ("<ns>:…"), keeping two apps on one Redis server apart.
	CacheNamespace   string
	CacheMode        cache.Mode
	CacheTTL         time.Duration
	CacheSoftTTL     time.Duration
	CacheNegTTL      time.Duration
	LockTTL          time.Duration
	LockWait         time.Duration
	LockWatchdog     bool
	LockWaiter       cache.Waiter // LOCK_WAITER: wait, fail or load
	DrainDelay       time.Duration
	L1TTL            time.Duration
	L1Tracking       bool               // L1_INVALIDATION=tracking: Redis CLIENT TRACKING, not pub/sub
	HTTPCache        handlers.HTTPCache // Cache-Control of product reads
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
	BreakerOpenOld   bool          // the deprecated BREAKER_OPEN_TIMEOUT is set
	MainMaxConns     int
	ReportsMaxConns  int
	CheckoutReserved int // DB_CHECKOUT_RESERVED: main-pool connections only checkout may use
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
	HotKeys              []int64
	LogLevel             string
	LogFlush             time.Duration // LOG_FLUSH_INTERVAL: access lines batched this long; 0 = one write per line
	APIKeys              []string      // API_KEYS: bearer keys with write scope, besides the api_keys table
	BodyReadTimeout      time.Duration
	BodyMinRate          int           // bytes per second; 0 = no minimum
	AdminToken           string        // ADMIN_TOKEN: required on the admin listener when set
	CacheSigningKey      []byte        // CACHE_SIGNING_KEY: HMAC key of cache entries; nil = unsigned
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
	Tracing              tracingConfig // OTEL_*: OpenTelemetry tracing (tracing.go), off by default

	// HotKey is automatic hot-key detection (HOT_KEY_DETECT, _THRESHOLD,
	// _TOP, _L1_TTL; hot.go).
	HotKey hotKeySettings
}

// loadConfig reads and checks the configuration. A malformed value or a
// broken timeout layering fails with one line naming the variable.
func loadConfig(getenv func(string) string) (config, error) {
	p := envParser{getenv: getenv}
	c := config{
		HTTPAddr:          p.str("HTTP_ADDR", ":8080"),
		AdminAddr:         p.str("ADMIN_ADDR", "127.0.0.1:8081"),
		AdminAddrSet:      p.set("ADMIN_ADDR"),
		MetricsAddr:       p.str("METRICS_ADDR", ""),
		MigrateOnStart:    p.boolean("MIGRATE_ON_START", true),
		DatabaseURL:       p.str("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		RedisURL:          p.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		CacheNamespace:    p.namespace("CACHE_NAMESPACE"),
		RedisClusterAddrs: p.hostPorts("REDIS_CLUSTER_ADDRS"),
		DBPooler:          db.Pooler(p.oneOf("DB_POOLER", "none", "none", "pgbouncer", "pgbouncer-prepared")),
		DatabaseDirectURL: p.str("DATABASE_DIRECT_URL", ""),
		DatabaseReadURL:   p.str("DATABASE_READ_URL", ""),
		CacheNegTTL:       p.duration("CACHE_NEGATIVE_TTL", 30*time.Second),
		LockWatchdog:      p.boolean("LOCK_WATCHDOG", true),
		DrainDelay:        p.durationOrZero("SHUTDOWN_DRAIN_DELAY", 0),
		L1Size:            p.positive("L1_SIZE", 10_000),
		L1OutageTTL:       p.durationOrZero("L1_OUTAGE_TTL", 30*time.Second),
		L1Tracking:        p.oneOf("L1_INVALIDATION", "pubsub", "pubsub", "tracking") == "tracking",
		XFetchBeta:        p.float("XFETCH_BETA", 1),
		HotKeyCopies:      p.positive("HOT_KEY_COPIES", 1),
		TTLJitter:         p.fraction("TTL_JITTER", 0.1, 0.5),
		RateLimit:         p.str("RATE_LIMIT", "100-S"),
		RateLimitLease:    p.fraction("RATE_LIMIT_LEASE", 0.01, 0.2),
		TrustedProxies:    p.cidrs("TRUSTED_PROXIES"),
		ShedMaxWaiting:    p.positive("SHED_MAX_WAITING", 20),
		Admission:         db.Admission(p.oneOf("ADMISSION", string(db.AdmitDeadline), string(db.AdmitDeadline), string(db.AdmitQueue))),
		LimitCritical:     p.positive("CONCURRENCY_CRITICAL", 256),
		LimitNormal:       p.positive("CONCURRENCY_NORMAL", 1024),
		LimitLow:          p.positive("CONCURRENCY_LOW", 8),
		BreakerFailures:   p.atMost("BREAKER_FAILURES", p.positive("BREAKER_FAILURES", 5), math.MaxInt32),
		MainMaxConns:      p.atMost("DB_MAIN_MAX_CONNS", p.positive("DB_MAIN_MAX_CONNS", 20), math.MaxInt32),
		ReportsMaxConns:   p.atMost("DB_REPORTS_MAX_CONNS", p.positive("DB_REPORTS_MAX_CONNS", 4), math.MaxInt32),
		ExpectedInstances: p.positive("EXPECTED_INSTANCES", 1),
		PoolHeadroom:      p.nonNegative("DB_CONNS_HEADROOM", 10),
		StrictPoolSizing:  p.boolean("STRICT_POOL_SIZING", false),
		IdleTimeout:       p.duration("DB_IDLE_TIMEOUT", 30*time.Second),
		ShutdownTimeout:   p.duration("SHUTDOWN_TIMEOUT", 10*time.Second),
		HotKeys:           p.ids("HOT_KEYS"),
		StaticKeys:        p.ids("STATIC_KEYS"),
		StaticTTL:         p.duration("STATIC_TTL", 24*time.Hour),
		StaticRepair:      p.duration("STATIC_REPAIR_PERIOD", time.Minute),
		LogLevel:          p.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		LogFlush:          p.durationOrZero("LOG_FLUSH_INTERVAL", defaultLogFlush),
		APIKeys:           p.apiKeys("API_KEYS"),
		BodyMinRate:       p.nonNegative("BODY_MIN_RATE", 1024),
		AdminToken:        p.str("ADMIN_TOKEN", ""),
		RateLimitKey:      p.str("RATE_LIMIT_KEY", "1000-S"),
		UnknownIDFilter:   p.boolean("UNKNOWN_ID_FILTER", true),
		UnknownIDLookups:  p.positive("UNKNOWN_ID_LOOKUPS", 20),
	}
	c.CacheSigningKey = signingKey(&p)
	if c.LogFlush > maxLogFlush {
		p.fail("LOG_FLUSH_INTERVAL", p.getenv("LOG_FLUSH_INTERVAL"), fmt.Sprintf("must be at most %v: a killed process loses up to this much access log", maxLogFlush))
	}
	if opt, err := redis.ParseURL(c.RedisURL); err != nil {
		p.fail("REDIS_URL", c.RedisURL, err.Error())
	} else {
		c.RedisDB = opt.DB
	}
	c.Tracing = readTracing(&p)
	c.LockWaiter, _ = cache.ParseWaiter(p.oneOf("LOCK_WAITER", "wait", "wait", "fail", "load"))
	budget := readBudget(&p)
	c.RequestTimeout, c.AcquireTimeout, c.StmtTimeout = budget.Request, budget.Acquire, budget.Statement
	c.LockTTL, c.LockWait, c.WriteTimeout, c.LoadTimeout = budget.LockTTL, budget.LockWait, budget.Write, budget.Load()
	c.LockCoversDeadHolder = budget.coversDeadHolder()
	c.BodyReadTimeout = budget.Body
	ttls := readTTLs(&p)
	c.CacheTTL, c.CacheSoftTTL, c.L1TTL = ttls.Hard, ttls.Soft, ttls.L1
	c.HotKey = readHotKeys(&p, ttls)
	c.BreakerOpenMin, c.BreakerOpenMax, c.BreakerOpenOld = breakerOpen(&p)
	mode, err := cache.ParseMode(p.str("CACHE_MODE", string(cache.ModeSWR)))
	if err != nil {
		p.fail("CACHE_MODE", getenv("CACHE_MODE"), err.Error())
	}
	c.CacheMode = mode
	// A fifth of the main pool (at least 1) stays free for checkout.
	c.CheckoutReserved = p.nonNegative("DB_CHECKOUT_RESERVED", max(1, c.MainMaxConns/5))
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
		NotFoundMaxAge:       min(c.CacheNegTTL, maxAge),
	}
	// A range of every address would believe any client's X-Forwarded-For:
	// every limit per address could be dodged by writing a header.
	if !p.boolean("TRUSTED_PROXIES_ALLOW_ALL", false) && coversAll(c.TrustedProxies) {
		p.fail("TRUSTED_PROXIES", getenv("TRUSTED_PROXIES"),
			"a range of every address lets any client choose its IP with X-Forwarded-For; list your proxies, or set TRUSTED_PROXIES_ALLOW_ALL=true")
	}
	if c.RateLimit != "off" {
		if _, err := limiter.NewRateFromFormatted(c.RateLimit); err != nil {
			p.fail("RATE_LIMIT", c.RateLimit, `want "off" or N-S, N-M, N-H, N-D (e.g. 100-S)`)
		}
	}
	if c.RateLimitKey != "off" {
		if _, err := limiter.NewRateFromFormatted(c.RateLimitKey); err != nil {
			p.fail("RATE_LIMIT_KEY", c.RateLimitKey, `want "off" or N-S, N-M, N-H, N-D (e.g. 1000-S)`)
		}
	}
	p.errs = append(p.errs, budget.check()...)
	p.errs = append(p.errs, ttls.check()...)
	if c.StaticRepair >= c.StaticTTL {
		p.errs = append(p.errs, fmt.Errorf("config: STATIC_REPAIR_PERIOD=%s must be shorter than STATIC_TTL=%s, or static keys expire between repairs; change one of them",
			c.StaticRepair, c.StaticTTL))
	}
	if err := p.err(); err != nil {
		return config{}, err
	}
	return c, errors.Join(c.checkCluster(), c.checkPooler())
}

// cacheTTLs is the freshness chain L1_TTL < CACHE_SOFT_TTL < CACHE_TTL:
// L1 must not hide a refresh, and stale must end before the hard expiry.
type cacheTTLs struct {
	L1, Soft, Hard time.Duration
	l1Set          bool
	softSet        bool
	hardSet        bool
}

// readTTLs reads the three TTLs; an unset one follows the ones that were
// set (defaults 1 s, 30 s, 10 min). L1_TTL=0 turns the L1 off.
func readTTLs(p *envParser) cacheTTLs {
	t := cacheTTLs{l1Set: p.set("L1_TTL"), softSet: p.set("CACHE_SOFT_TTL"), hardSet: p.set("CACHE_TTL")}
	t.L1 = p.durationOrZero("L1_TTL", time.Second)
	t.Soft = p.duration("CACHE_SOFT_TTL", 30*time.Second)
	t.Hard = p.duration("CACHE_TTL", 10*time.Minute)
	if !t.softSet && t.l1Set {
		t.Soft = max(t.Soft, 2*t.L1)
	}
	if !t.hardSet && (t.softSet || t.l1Set) {
		t.Hard = max(t.Hard, 2*t.Soft)
	}
	if !t.softSet && t.Soft >= t.Hard {
		t.Soft = t.Hard / 2
	}
	if !t.l1Set && t.L1 >= t.Soft {
		t.L1 = t.Soft / 2
	}
	return t
}

func (t cacheTTLs) check() []error {
	origin := func(set bool) string {
		if set {
			return "set"
		}
		return "derived"
	}
	var errs []error
	if t.Soft >= t.Hard {
		errs = append(errs, fmt.Errorf("config: CACHE_SOFT_TTL=%s (%s) must be shorter than CACHE_TTL=%s (%s): stale answers need a window before the hard expiry; change one of them",
			t.Soft, origin(t.softSet), t.Hard, origin(t.hardSet)))
	}
	if t.L1 >= t.Soft {
		errs = append(errs, fmt.Errorf("config: L1_TTL=%s (%s) must be shorter than CACHE_SOFT_TTL=%s (%s): L1 would hide refreshes; change one of them",
			t.L1, origin(t.l1Set), t.Soft, origin(t.softSet)))
	}
	return errs
}

// minSigningKey is the shortest CACHE_SIGNING_KEY accepted: HMAC-SHA256's
// own block of security, 32 bytes (`openssl rand -hex 32` gives 64).
const minSigningKey = 32

// signingKey reads CACHE_SIGNING_KEY. A mistake is reported by length
// only: the value is a secret and must not reach a log.
func signingKey(p *envParser) []byte {
	k := p.getenv("CACHE_SIGNING_KEY")
	if k == "" {
		return nil
	}
	switch {
	case strings.TrimSpace(k) != k:
		p.errs = append(p.errs, errors.New("config: CACHE_SIGNING_KEY has surrounding spaces: remove them (every instance must use the same bytes)"))
		return nil
	case len(k) < minSigningKey:
		p.errs = append(p.errs, fmt.Errorf("config: CACHE_SIGNING_KEY is %d bytes, want at least %d (e.g. openssl rand -hex 32)", len(k), minSigningKey))
		return nil
	}
	return []byte(k)
}

// outageTTL is L1_OUTAGE_TTL as cache.Config.OutageTTL, where 0 is the
// default and a negative value turns holding off.
func (c config) outageTTL() time.Duration {
	if c.L1OutageTTL == 0 {
		return -1
	}
	return c.L1OutageTTL
}

// namespace is CACHE_NAMESPACE as a key prefix ("ns:"), or "".
func (c config) namespace() string {
	if c.CacheNamespace == "" {
		return ""
	}
	return c.CacheNamespace + ":"
}

// invalidationChannel is the L1 invalidation channel. Pub/sub ignores the
// logical database, so without a namespace the channel carries it: apps on
// databases 12 and 13 of one server never evict each other's L1.
func (c config) invalidationChannel() string {
	if c.CacheNamespace != "" {
		return c.namespace() + "cache:invalidate"
	}
	return fmt.Sprintf("cache:invalidate:db%d", c.RedisDB)
}

// breakerOpen reads the breakers' probe schedule. BREAKER_OPEN_TIMEOUT,
// the fixed open time of old, is a deprecated alias of BREAKER_OPEN_MAX: it
// was the longest a breaker stayed open and still is; BREAKER_OPEN_MAX wins
// when both are set. An unset BREAKER_OPEN_MIN above the cap follows it down.
func breakerOpen(p *envParser) (minOpen, maxOpen time.Duration, deprecated bool) {
	minOpen = p.duration("BREAKER_OPEN_MIN", 375*time.Millisecond)
	maxOpen = p.duration("BREAKER_OPEN_MAX", 30*time.Second)
	if old := p.getenv("BREAKER_OPEN_TIMEOUT"); old != "" {
		deprecated = true // warned at start, whether or not it takes effect
		if p.getenv("BREAKER_OPEN_MAX") == "" {
			maxOpen = p.duration("BREAKER_OPEN_TIMEOUT", maxOpen)
		}
	}
	if minOpen > maxOpen {
		if p.getenv("BREAKER_OPEN_MIN") != "" {
			p.fail("BREAKER_OPEN_MIN", p.getenv("BREAKER_OPEN_MIN"), fmt.Sprintf("must not exceed BREAKER_OPEN_MAX (%s)", maxOpen))
		}
		minOpen = maxOpen
	}
	return minOpen, maxOpen, deprecated
}

// fillChannel carries the lock holders' fill signals (cache/signal.go),
// kept apart per logical database or namespace like invalidationChannel.
func (c config) fillChannel() string {
	if c.CacheNamespace != "" {
		return c.namespace() + "cache:filled"
	}
	return fmt.Sprintf("cache:filled:db%d", c.RedisDB)
}

// The access log is batched (internal/logbuf): defaultLogFlush keeps it a
// tenth of a second behind at most, maxLogFlush bounds what a killed
// process can lose.
const (
	defaultLogFlush = 100 * time.Millisecond
	maxLogFlush     = 10 * time.Second
)
