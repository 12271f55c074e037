package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
	limiter "github.com/ulule/limiter/v3"
	memstore "github.com/ulule/limiter/v3/drivers/store/memory"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/middleware"
)

// newEngine builds gin with the request-wide middleware in its explicit
// order: recovery → request id + access log → deadline. The API routes add
// per-IP rate limit → priority shedding → concurrency limit (routeClasses).
func newEngine(cfg config, m *metrics, log *slog.Logger) (*gin.Engine, error) {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	// Before anything reads ClientIP: with no trusted proxies (the default)
	// an X-Forwarded-For header changes nothing.
	if err := engine.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("config: TRUSTED_PROXIES: %w", err)
	}
	engine.Use(
		middleware.Recover(log),
		middleware.RequestLog(log),
		middleware.Metrics(m.requests),
		middleware.Timeout(cfg.RequestTimeout),
	)
	return engine, nil
}

// newLimitStore counts in Redis (one budget across instances) and falls back
// to this instance's memory while Redis is unusable.
func newLimitStore(rdb redis.UniversalClient, log *slog.Logger) limiter.Store {
	// The memory store sweeps expired counters from a goroutine that only a
	// GC finalizer stops; it lives as long as the process, which is the
	// store's lifetime here. Without the sweep, a long Redis outage would
	// keep one counter per client address ever seen.
	opts := limiter.StoreOptions{Prefix: "ratelimit", MaxRetry: 1, CleanUpInterval: time.Minute}
	var lastLog atomic.Int64
	return middleware.NewFailoverStore(
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
}

// routeClasses builds the API's admission control, per priority class:
// per-IP rate limit → shedding → concurrency limit. Low-value reports are
// shed at a quarter of the queue that normal reads may join, checkout and
// writes only at twice it. Every refusal is counted by reason and class.
func routeClasses(cfg config, rdb redis.UniversalClient, mainPool, reportsPool *db.Pool, m *metrics, log *slog.Logger) handlers.Classes {
	var lim *limiter.Limiter
	if cfg.RateLimit != "off" {
		rate, _ := limiter.NewRateFromFormatted(cfg.RateLimit) // validated by loadConfig
		lim = limiter.New(newLimitStore(rdb, log), rate)
	}
	refused := func(reason, class string) func(*gin.Context) {
		return func(*gin.Context) { m.refusedBy(reason, class) }
	}
	chain := func(class string, q *db.Pool, maxWaiting int64, atDoor bool, concurrency int) []gin.HandlerFunc {
		var hs []gin.HandlerFunc
		if lim != nil {
			hs = append(hs, middleware.RateLimit(lim, log, refused("rate_limited", class)))
		}
		return append(hs,
			middleware.Shed(q, maxWaiting, atDoor, db.WithMaxWaiting, refused("shed", class)),
			middleware.Limit(concurrency, refused("concurrency", class)),
		)
	}
	limit := int64(cfg.ShedMaxWaiting)
	return handlers.Classes{
		Critical: chain("critical", mainPool, 2*limit, true, cfg.LimitCritical),
		Normal:   chain("normal", mainPool, limit, false, cfg.LimitNormal),
		Low:      chain("low", reportsPool, max(1, limit/4), true, cfg.LimitLow),
	}
}

// poolConfig sizes one bulkhead pool.
func poolConfig(cfg config, name string, maxConns int, log *slog.Logger) db.Config {
	url := cfg.DatabaseURL
	if name == "reports" && cfg.DatabaseReadURL != "" {
		url = cfg.DatabaseReadURL // reports tolerate a replica's lag
	}
	return db.Config{
		URL: url, Name: name, MaxConns: int32(maxConns), Pooler: cfg.DBPooler,
		AcquireTimeout: cfg.AcquireTimeout, IdleTimeout: cfg.IdleTimeout, StatementTimeout: cfg.StmtTimeout,
		Breaker: db.BreakerConfig{
			Failures: uint32(cfg.BreakerFailures), OpenFor: cfg.BreakerOpen,
			OnStateChange: func(pool string, from, to gobreaker.State) {
				log.Warn("breaker state", "breaker", "postgres_"+pool, "from", from.String(), "to", to.String())
			},
		},
	}
}

// checkPoolSizing sets the fleet's pools against the server's
// max_connections: a warning by default, a refusal to start with
// STRICT_POOL_SIZING. Failing to read the limits is only a warning: the
// check advises, the database decides.
func checkPoolSizing(ctx context.Context, cfg config, pool *db.Pool, log *slog.Logger) error {
	if cfg.DBPooler.Behind() {
		logPoolerBudget(cfg, log)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout+cfg.StmtTimeout)
	defer cancel()
	r, err := db.CheckSizing(ctx, pool, db.Sizing{
		Instances:   cfg.ExpectedInstances,
		PerInstance: cfg.MainMaxConns + cfg.ReportsMaxConns,
		Headroom:    cfg.PoolHeadroom,
	})
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

// breakerCheck makes a breaker's state a readiness check: open is not ready.
func breakerCheck(state func() gobreaker.State) func(context.Context) error {
	return func(context.Context) error {
		if s := state(); s == gobreaker.StateOpen {
			return fmt.Errorf("circuit %s", s)
		}
		return nil
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by loadConfig
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
