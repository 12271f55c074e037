// Command api is the stampede-guard product API: a Gin service that keeps
// PostgreSQL alive when a hot cache key expires, when Redis restarts, when a
// deploy empties the cache, and when traffic grows past what the database
// can take. main only wires; every protection lives in its own package.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sony/gobreaker/v2"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/migrations"
	"github.com/stampede-guard/api/repo"
)

func main() {
	if err := run(context.Background(), os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run starts the service and blocks until ctx ends or SIGINT/SIGTERM
// arrives, then shuts down gracefully. It returns nil after a clean shutdown.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	// ---- Configuration ----------------------------------------------------
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(stdout, cfg.LogLevel)
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	// ---- Database: two pools, so reports can never starve checkout ----------
	mainPool, err := db.Open(ctx, poolConfig(cfg, "main", cfg.MainMaxConns, log))
	if err != nil {
		return err
	}
	defer mainPool.Close()
	if err := checkPoolSizing(ctx, cfg, mainPool, log); err != nil {
		return err
	}
	// Migrations get a roomier deadline than a request: they run once, under
	// goose's advisory lock, before any traffic.
	if err := db.Migrate(ctx, mainPool, migrations.FS, log); err != nil {
		return err
	}
	reportsPool, err := db.Open(ctx, poolConfig(cfg, "reports", cfg.ReportsMaxConns, log))
	if err != nil {
		return err
	}
	defer reportsPool.Close()

	// ---- Redis -------------------------------------------------------------
	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	redisBreaker := cache.NewBreaker(uint32(cfg.BreakerFailures), cfg.BreakerOpen, 3, func(from, to gobreaker.State) {
		log.Warn("breaker state", "breaker", "redis", "from", from.String(), "to", to.String())
	})
	rdb.AddHook(redisBreaker)
	if err := rdb.Ping(ctx).Err(); err != nil {
		// Not fatal: the service answers from the database while Redis is
		// away, and /readyz says so.
		log.Warn("redis not reachable at start", "err", err)
	}

	// ---- Cache and repositories -------------------------------------------
	// A load may take one pool acquire plus one statement (within the
	// request deadline, checked at start), not just LOCK_TTL: the watchdog
	// keeps the lock for a longer load, and without it a load that outlives
	// its lock still answers its callers (SPEC §2.1: 2 queries, not none).
	c := cache.New(ctx, rdb, cache.Config{
		Mode: cfg.CacheMode, TTL: cfg.CacheTTL, SoftTTL: cfg.CacheSoftTTL, NegativeTTL: cfg.CacheNegTTL,
		LockTTL: cfg.LockTTL, LockWait: cfg.LockWait, LoadTimeout: cfg.AcquireTimeout + cfg.StmtTimeout, NoWatchdog: !cfg.LockWatchdog, FailFast: cfg.LockFailFast,
		XFetchBeta: cfg.XFetchBeta, L1TTL: cfg.L1TTL, L1Size: cfg.L1Size, Copies: cfg.HotKeyCopies,
		Tracking: trackingOptions(cfg, rdb), TrackPrefixes: []string{repo.KeyPrefix},
		Static: repo.Keys(cfg.StaticKeys), StaticTTL: cfg.StaticTTL,
	}, log)
	defer c.Close()
	products := repo.NewProducts(mainPool, c, log)
	orders := repo.NewOrders(mainPool, log)
	reports := repo.NewReports(reportsPool)

	// ---- HTTP ----------------------------------------------------------------
	health := handlers.NewHealth(time.Second,
		handlers.Check{Name: "postgres", Ping: mainPool.Ping},
		handlers.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		handlers.Check{Name: "postgres_breaker", Ping: breakerCheck(mainPool.BreakerState)},
		handlers.Check{Name: "redis_breaker", Ping: breakerCheck(redisBreaker.State)},
	)
	pools := []*db.Pool{mainPool, reportsPool}
	breakers := map[string]func() gobreaker.State{
		"postgres_main": mainPool.BreakerState, "postgres_reports": reportsPool.BreakerState, "redis": redisBreaker.State,
	}
	m := newMetrics(c, pools, breakers)
	engine, err := newEngine(cfg, m, log)
	if err != nil {
		return err
	}
	handlers.Register(engine,
		handlers.NewProducts(products, cfg.HTTPCache, log), handlers.NewOrders(orders, log),
		handlers.NewReports(reports, log), health,
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}),
		routeClasses(cfg, rdb, mainPool, reportsPool, m, log))

	srv := &http.Server{
		Handler:           engine,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.WriteTimeout, // outside REQUEST_TIMEOUT (checked at start)
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	// ---- Admin: console, state feed, pprof (loopback by default) -------------
	if cfg.AdminAddr != "off" {
		stopAdmin, err := serveAdmin(cfg.AdminAddr, &admin{
			cache: c, pools: pools, breakers: breakers, metrics: m, rdb: rdb, log: log,
		}, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = stopAdmin(ctx)
		}()
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	// ---- Warm-up and refresh-ahead of HOT_KEYS, repair of STATIC_KEYS --------
	// Liveness answers during warm-up; readiness waits for it.
	if len(cfg.HotKeys) > 0 {
		n, err := products.Warm(ctx, cfg.HotKeys)
		log.Info("warm-up done", "keys", len(cfg.HotKeys), "warmed", n, "err", err)
		products.KeepFresh(cfg.HotKeys, refreshPeriod(cfg))
	}
	if len(cfg.StaticKeys) > 0 {
		n, err := products.Warm(ctx, cfg.StaticKeys)
		log.Info("static keys warmed", "keys", len(cfg.StaticKeys), "warmed", n, "err", err)
		products.RepairStatic(cfg.StaticKeys, cfg.StaticRepair)
	}
	health.MarkReady()
	log.Info("listening", "addr", ln.Addr().String(), "cache_mode", cfg.CacheMode)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	// ---- Shutdown ------------------------------------------------------------
	// Readiness goes 503 first so load balancers stop sending; in-flight
	// requests then get up to SHUTDOWN_TIMEOUT to finish. Deferred closes
	// run after: cache (stops refreshers), Redis, pools.
	log.Info("shutting down", "drain_delay", cfg.DrainDelay)
	health.Drain()
	// Keep serving while load balancers see /readyz fail and stop sending
	// (SHUTDOWN_DRAIN_DELAY, 0 by default: set it to a few probe periods
	// behind a load balancer).
	select {
	case <-time.After(cfg.DrainDelay):
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// refreshPeriod keeps hot keys reloaded well before they could go stale.
func refreshPeriod(cfg config) time.Duration {
	ttl := cfg.CacheSoftTTL
	if cfg.CacheMode != cache.ModeSWR {
		ttl = cfg.CacheTTL
	}
	return max(ttl/2, 100*time.Millisecond)
}
