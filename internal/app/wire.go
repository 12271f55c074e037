package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"
	memstore "github.com/ulule/limiter/v3/drivers/store/memory"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

// newEngine builds gin with the request-wide middleware in its explicit
// order: trace span (when tracing is on) → nosniff → recovery → request id
// + access log → deadline. The API routes add
// per-IP rate limit → priority shedding → concurrency limit (routeClasses).
func newEngine(cfg config.Config, m *telemetry.Metrics, trace gin.HandlerFunc, log *slog.Logger, access *middleware.AccessLog) (*gin.Engine, error) {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	// Before anything reads ClientIP: with no trusted proxies (the default)
	// an X-Forwarded-For header changes nothing.
	if err := engine.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("config: TRUSTED_PROXIES: %w", err)
	}
	// Only X-Forwarded-For, as documented: gin would also believe
	// X-Real-IP, which a proxy that only appends X-Forwarded-For passes on
	// from the client untouched. (middleware's clientIP skips gin's
	// parsing when this header is absent: keep the two in step.)
	engine.RemoteIPHeaders = []string{"X-Forwarded-For"}
	// Before any other frame: the stack grows once, here, not deep in the chain.
	engine.Use(middleware.GrowStack())
	if trace != nil { // the request's span encloses everything after it
		engine.Use(trace)
	}
	engine.Use(
		middleware.Nosniff(), // first: every answer carries it, a panic's 500 too
		middleware.Recover(log),
		middleware.RequestLog(access),
		middleware.Metrics(m.Requests()),
		middleware.Timeout(cfg.RequestTimeout),
	)
	return engine, nil
}

// newLimitStore counts in Redis (one budget across instances) and falls back
// to this instance's memory while Redis is unusable.
func newLimitStore(rdb redis.UniversalClient, ns string, log *slog.Logger) limiter.Store {
	// The memory store sweeps expired counters from a goroutine that only a
	// GC finalizer stops; it lives as long as the process, which is the
	// store's lifetime here. Without the sweep, a long Redis outage would
	// keep one counter per client address ever seen.
	opts := limiter.StoreOptions{Prefix: limitPrefix(ns), MaxRetry: 1, CleanUpInterval: time.Minute}
	var lastLog atomic.Int64
	store := middleware.NewFailoverStore(
		func() (limiter.Store, error) { return redisstore.NewStoreWithOptions(rdb, opts) },
		memstore.NewStoreWithOptions(opts),
		5*time.Second,
		func(err error) {
			// At most one line per second: an outage must not flood the log.
			now := time.Now().Unix()
			if last := lastLog.Load(); now > last && lastLog.CompareAndSwap(last, now) {
				log.Warn("rate limit: shared store unavailable, counting per instance", "err", err)
			}
		},
	)
	// Now, at start, rather than in the first limited request: a Redis
	// that cannot be reached now is tried again on use, every 5 s.
	if err := store.Connect(); err != nil {
		log.Warn("rate limit: shared store unavailable at start, counting per instance until it is", "err", err)
	}
	return store
}

// limitPrefix names the rate-limit counters in Redis; ulule adds ":" and
// the counter's name.
func limitPrefix(ns string) string { return ns + "ratelimit" }

// limitWindowEnd says when a shared counter's window ends, to the
// millisecond (ulule reports whole seconds): asked once per exhausted
// window, so a refused client is told exactly how long to wait. A counter
// already gone ended its window: now. False when Redis cannot say within
// limitWindowAsk (the count may have come from the memory fallback).
func limitWindowEnd(rdb redis.UniversalClient, ns string) func(context.Context, string) (time.Time, bool) {
	prefix := limitPrefix(ns) + ":"
	return func(ctx context.Context, key string) (time.Time, bool) {
		ctx, cancel := context.WithTimeout(ctx, limitWindowAsk)
		defer cancel()
		ttl, err := rdb.PTTL(ctx, prefix+key).Result()
		switch {
		case err != nil, ttl == -1: // -1: no expiry, not ulule's counter
			return time.Time{}, false
		case ttl < 0: // -2: expired between the count and the question
			return time.Now(), true
		}
		return time.Now().Add(ttl), true
	}
}

// limitWindowAsk bounds the PTTL of limitWindowEnd: it holds the client's
// lease bucket, and a Redis that is down must not hold it for an I/O
// timeout.
const limitWindowAsk = 100 * time.Millisecond

// routeClass is one priority class of the API's routes, a row of
// classTable: what its requests pass before a handler.
type routeClass struct {
	slot        *[]gin.HandlerFunc // where the chain goes in handlers.Classes
	name        string             // the class label of refusals (metrics, console)
	priority    db.Priority        // its share at the pool's gate
	pool        *db.Pool           // the pool whose queue shedding watches
	maxWaiting  int64              // the queue the class may join (gate and door)
	shedAtDoor  bool               // refuse at the door once that queue is full
	concurrency int                // requests of the class in flight at most
	// checksKey: a key sent must be accepted (auth.Optional), after the
	// rate limit and before the body is read, so that a refusal leaves at
	// once. Checkout's key scopes its order; a product write has passed
	// Require already.
	checksKey bool
	before    []gin.HandlerFunc // after the rate limit, before anything scarce
}

// classTable is the API's priority classes. Low-value reports are shed at
// a quarter of the queue that normal reads may join (at least 1, never
// more than it), checkout and writes only at twice it. SHED_MAX_WAITING=0
// lets no class queue.
func classTable(cfg config.Config, classes *handlers.Classes, mainPool, reportsPool *db.Pool) []routeClass {
	limit := int64(cfg.ShedMaxWaiting)
	// Bodies are read whole before shedding and the concurrency limit, so
	// a client that trickles its body never holds a slot (see ReadBody).
	readBody := middleware.ReadBody(middleware.BodyConfig{
		MaxBytes: handlers.MaxBody, Timeout: cfg.BodyReadTimeout, MinRate: int64(cfg.BodyMinRate), Grace: bodyReadGrace,
	})
	return []routeClass{
		{slot: &classes.Critical, name: "critical", priority: db.Critical, pool: mainPool,
			maxWaiting: 2 * limit, shedAtDoor: true, concurrency: cfg.LimitCritical, checksKey: true, before: []gin.HandlerFunc{readBody}},
		// Normal reads are mostly cached: only the pool refuses them, at
		// the moment one would queue; a read served from the cache never is.
		{slot: &classes.Normal, name: "normal", priority: db.Normal, pool: mainPool,
			maxWaiting: limit, shedAtDoor: false, concurrency: cfg.LimitNormal},
		{slot: &classes.Low, name: "low", priority: db.Low, pool: reportsPool,
			maxWaiting: min(limit, max(1, limit/4)), shedAtDoor: true, concurrency: cfg.LimitLow},
	}
}

// routeClasses builds the API's admission control, per priority class
// (classTable): rate limit (per API key when a valid one is presented,
// per IP otherwise) → a key sent must be valid (checkout) → body read
// (writes, checkout) → shedding → concurrency limit. Every refusal is
// counted by reason and class.
func routeClasses(cfg config.Config, rdb redis.UniversalClient, mainPool, reportsPool *db.Pool, m *telemetry.Metrics, log *slog.Logger) handlers.Classes {
	lims := newLimits(cfg, rdb, log)
	lim, keyLim := lims.ip, lims.key
	auth := middleware.NewAuth(middleware.AuthConfig{
		Static: cfg.APIKeys, Store: repo.NewAPIKeys(mainPool), Scope: repo.ScopeWrite,
		CacheTTL: apiKeyCacheTTL, LookupsPerSecond: apiKeyLookupsPerSecond,
		LookupsPerClient: apiKeyLookupsPerClient, LookupBurst: apiKeyLookupBurst,
		Failures: lims.authFailures, Log: log,
	})
	refused := func(reason, class string) func(*gin.Context) {
		return func(*gin.Context) { m.RefusedBy(reason, class) }
	}
	var classes handlers.Classes
	for _, rc := range classTable(cfg, &classes, mainPool, reportsPool) {
		// The class rides in the context to the pool's gate, which turns it
		// into a share of the request's deadline and a queue cap
		// (db/admission.go). First in the chain: a key lookup
		// (auth.Identify) reaches the pool too, within the class's cap.
		hs := []gin.HandlerFunc{markClass(&db.Class{Priority: rc.priority, MaxWaiting: rc.maxWaiting, Capped: true})}
		if keyLim != nil {
			// A valid key, wherever presented, gets its own budget.
			hs = append(hs, auth.Identify())
		}
		if lim != nil || keyLim != nil {
			hs = append(hs, middleware.RateLimitPer(lim, keyLim, log, refused("rate_limited", rc.name)))
		}
		if rc.checksKey {
			hs = append(hs, auth.Optional())
		}
		hs = append(hs, rc.before...)
		if rc.shedAtDoor {
			hs = append(hs, middleware.Shed(rc.pool, rc.maxWaiting, refused("shed", rc.name)))
		}
		*rc.slot = append(hs, middleware.Limit(rc.concurrency, refused("concurrency", rc.name)))
	}
	classes.Authorize = auth.Require()
	if lim != nil {
		classes.BeforeAuth = []gin.HandlerFunc{middleware.RateLimitBeforeAuth(lim, auth.Believed, log, refused("rate_limited", "critical"))}
	}
	// Checkout: the class chain held the caller's key to auth.Optional
	// (behind Identify when RATE_LIMIT_KEY is on, it reuses that verdict
	// rather than spend a second lookup on one made-up key); the key
	// scopes the Idempotency-Key and the order budget, spent here.
	if lims.orders != nil {
		classes.Checkout = []gin.HandlerFunc{middleware.RateLimitNamed(orderBucket, lims.orders, lims.orders, log, refused("rate_limited", "critical"))}
	}
	return classes
}

// markClass marks each request with its class for the pool's gate.
func markClass(cls *db.Class) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Request = c.Request.WithContext(db.WithClass(c.Request.Context(), cls))
		c.Next()
	}
}

// rateLimitClients bounds the clients whose leases an instance keeps; past
// it, those whose window has ended are forgotten first (their next request
// takes a new lease; see middleware/leasebuckets.go).
const rateLimitClients = 100_000

// A key from the api_keys table is believed for apiKeyCacheTTL after a
// lookup (a deleted key works that much longer); lookups of keys not yet
// believed are bounded per instance, so made-up keys cannot flood
// PostgreSQL.
const (
	apiKeyCacheTTL         = 30 * time.Second
	apiKeyLookupsPerSecond = 20
	// Each client's share: a genuine key costs one lookup per
	// apiKeyCacheTTL, so a burst of 5 and one a second only ever refuse a
	// client trying many keys, and leave the rest of the budget to others.
	apiKeyLookupsPerClient = 1
	apiKeyLookupBurst      = 5
)

// bodyReadGrace is how long a body may take before BODY_MIN_RATE applies:
// the few hundred bytes of a normal body arrive well within it.
const bodyReadGrace = 500 * time.Millisecond

// checkPoolSizing sets the fleet's pools against the server's
// max_connections: a warning by default, a refusal to start with
// STRICT_POOL_SIZING. Failing to read the limits is only a warning: the
// check advises, the database decides.
func checkPoolSizing(ctx context.Context, cfg config.Config, pool *db.Pool, log *slog.Logger) error {
	if cfg.DBPooler.Behind() {
		logPoolerBudget(cfg, log)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout+cfg.StmtTimeout)
	defer cancel()
	r, err := db.CheckSizing(ctx, pool, sizing(cfg))
	switch {
	case err != nil:
		log.Warn("pool sizing not checked", "err", err)
	case r.OK():
		log.Info("pool sizing", "fits", r.String())
	case cfg.StrictPoolSizing:
		return fmt.Errorf("pool sizing: the pools do not fit PostgreSQL's max_connections: %s; "+
			"lower DB_MAIN_MAX_CONNS/DB_REPORTS_MAX_CONNS, raise max_connections, or put PgBouncer in front", r)
	default:
		log.Warn("pool sizing: the pools do not fit PostgreSQL's max_connections; under full load some connects will fail with too many clients",
			"budget", r.String(), "strict", "set STRICT_POOL_SIZING=true to refuse to start")
	}
	return nil
}

// breakerCheck reports a breaker's state in /readyz's body (never in its
// status: see handlers.Health): open or probing. Where it is in its probe
// schedule goes in the body too (Health.ShowBreakers).
func breakerCheck(snapshot func() breaker.Snapshot) func(context.Context) error {
	return func(context.Context) error {
		if s := snapshot(); s.State != breaker.Closed {
			return handlers.ErrBreakerOpen
		}
		return nil
	}
}

// unlessOpen pings a dependency only while its breaker is closed: open
// (or probing) it answers that, and the server is not called. A breaker
// open promises no call to the server but its own probes; /readyz pinging
// anyway made one dial for every probe of every client.
func unlessOpen(snapshot func() breaker.Snapshot, ping func(context.Context) error) func(context.Context) error {
	open := breakerCheck(snapshot)
	return func(ctx context.Context) error {
		if err := open(ctx); err != nil {
			return err
		}
		return ping(ctx)
	}
}
