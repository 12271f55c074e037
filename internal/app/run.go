// Package app is the composition root of the stampede-guard API: it reads
// the configuration, opens every dependency, builds the HTTP server and
// runs it until a signal or its context ends. It protects nothing itself;
// it wires the packages that do, in the order the time budget needs.
package app

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
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/logbuf"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/server"
	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

// Main is the whole program behind main.go: it applies the process-wide
// GC setting, then runs the command in args (none: serve HTTP) and returns
// the process's exit code, with any error written to stderr.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	setGCPercent(getenv)
	if err := command(ctx, args, getenv, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// defaultGCPercent replaces Go's GOGC=100 unless GOGC is set. The live heap
// is small (a few MB: L1, pools, counters) and every request allocates a few
// KB, so at 100 a hot key triggers dozens of collections a second, about a
// tenth of the CPU per answer (docs/benchmarks.md, "hot key"). At 400 the heap
// may grow to five times its live size between collections: tens of MB for
// a quarter of the collections. GOGC=100 in the environment restores Go's
// trade-off, and a GOMEMLIMIT caps the heap whatever the percentage.
const defaultGCPercent = 400

// setGCPercent applies defaultGCPercent when the environment leaves GOGC
// unset. It is the process's setting, so main makes it, not run (which
// tests call many times in one process).
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
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
	// Every line goes through one batching writer: the access log is
	// batched (LOG_FLUSH_INTERVAL), everything else written at once after
	// it. Deferred first, so its last flush runs after everything else.
	lines := logbuf.New(stdout, cfg.LogFlush)
	defer lines.Start()()
	log := newLogger(lines.Direct(), cfg.LogLevel)
	access := middleware.NewAccessLog(lines, logLevel(cfg.LogLevel))
	redisconn.SetLogger(log) // go-redis's logger is one per process
	if cfg.BreakerOpenOld {
		log.Warn("BREAKER_OPEN_TIMEOUT is deprecated: it sets BREAKER_OPEN_MAX (the cap of the breakers' probe backoff) unless that is set")
	}
	// Tracing first, so its deferred shutdown runs last and flushes the
	// spans of everything closed before it.
	tr, err := newTracing(ctx, cfg.Tracing)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.shutdown(ctx); err != nil {
			log.Warn("tracing: flush at shutdown failed", "err", err)
		}
	}()
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	// Bind first: a busy port fails in milliseconds, not after the
	// database connect and migrations.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	defer ln.Close() // no-op once Serve has taken it; frees it on early errors

	// ---- Database: two pools, so reports can never starve checkout ----------
	mainPool, err := db.Open(ctx, cfg.dbConfig("main", cfg.MainMaxConns, tr.queryTracer(), log))
	if err != nil {
		return err
	}
	defer mainPool.Close()
	if err := checkPoolSizing(ctx, cfg, mainPool, log); err != nil {
		return err
	}
	// Migrations get a roomier deadline than a request: they run once, under
	// goose's advisory lock, before any traffic. MIGRATE_ON_START=false
	// leaves them to `api migrate up` (a deploy step of its own).
	if cfg.MigrateOnStart {
		if err := migrate(ctx, cfg, mainPool, log); err != nil {
			return err
		}
	}
	reportsPool, err := db.Open(ctx, cfg.dbConfig("reports", cfg.ReportsMaxConns, tr.queryTracer(), log))
	if err != nil {
		return err
	}
	defer reportsPool.Close()

	// ---- Redis -------------------------------------------------------------
	rdb, err := redisconn.Open(cfg.redisConfig())
	if err != nil {
		return fmt.Errorf("config: REDIS_URL: %w", err)
	}
	defer rdb.Close()
	if err := tr.instrumentRedis(rdb); err != nil {
		return err
	}
	redisBreaker := redisconn.NewBreaker(rdb, cfg.breakerConfig(log)) // hooks itself into rdb
	defer redisBreaker.Close()                                        // before rdb.Close: it probes through rdb
	if err := rdb.Ping(ctx).Err(); err != nil {
		// Not fatal: the service answers from the database while Redis is
		// away, and /readyz says so.
		log.Warn("redis not reachable at start", "err", err)
	}

	// ---- Cache and repositories -------------------------------------------
	// A load may take one pool acquire plus one statement, counted from
	// taking the lock (the time budget, budget.go): the watchdog keeps the
	// lock for a longer load, and without it a load that outlives its lock
	// still answers its callers (2 queries, not none).
	if !cfg.LockCoversDeadHolder {
		log.Warn("LOCK_WAIT ends before a dead holder's LOCK_TTL plus one load: waiters give up early (LOCK_WAITER decides what they answer)",
			"lock_wait", cfg.LockWait, "lock_ttl", cfg.LockTTL, "load", cfg.LoadTimeout)
	}
	hot := newHotKeys(cfg)                              // nil with HOT_KEY_DETECT=false
	replicas := newReplicaReads(cfg, rdb, redisBreaker) // nil unless REDIS_REPLICA_READS
	if replicas != nil {
		defer replicas.Close()
	}
	c := cache.New(ctx, rdb, cfg.cacheConfig(rdb, hot, replicas, tr.provider()), log)
	defer c.Close()
	products := repo.NewProducts(mainPool, c, log)
	if hot != nil {
		products.CountReads(hot)
	}
	if cfg.UnknownIDFilter { // penetration defence (UNKNOWN_ID_FILTER)
		if err := products.FilterUnknownIDs(ctx, float64(cfg.UnknownIDLookups)); err != nil {
			log.Warn("unknown-id filter: loaded later", "err", err)
		}
	}
	orders := repo.NewOrders(mainPool, log)
	reports := repo.NewReports(reportsPool)

	// ---- HTTP ----------------------------------------------------------------
	health := handlers.NewHealth(time.Second, log,
		handlers.Check{Name: "postgres", Ping: mainPool.Ping},
		handlers.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		handlers.Check{Name: "postgres_breaker", Ping: breakerCheck(mainPool.Breaker)},
		handlers.Check{Name: "redis_breaker", Ping: breakerCheck(redisBreaker.Snapshot)},
	)
	pools := []*db.Pool{mainPool, reportsPool}
	breakers := map[string]func() breaker.Snapshot{
		"postgres_main": mainPool.Breaker, "postgres_reports": reportsPool.Breaker, "redis": redisBreaker.Snapshot,
	}
	health.ShowBreakers(func() any {
		out := make(map[string]breaker.Snapshot, len(breakers))
		for name, snapshot := range breakers {
			out[name] = snapshot()
		}
		return out
	})
	m := newMetrics(c, pools, breakers)
	m.reg.MustRegister(hotKeysCollector{hot})
	engine, err := newEngine(cfg, m, tr.middleware(cfg.Tracing.ServiceName), log, access)
	if err != nil {
		return err
	}
	var reads *requestTally // the console's request count and top keys
	if cfg.AdminAddr != "off" {
		// Counted only where a console can show them: with ADMIN_ADDR=off
		// the tally was a lock and a map update per request for no reader.
		reads = newRequestTally()
		engine.Use(reads.middleware())
	}
	publicMetrics, stopMetrics, err := serveMetrics(cfg.MetricsAddr, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}), log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	handlers.Register(engine,
		handlers.NewProducts(products, cfg.HTTPCache, log), handlers.NewOrders(orders, log),
		handlers.NewReports(reports, log), health, publicMetrics,
		routeClasses(cfg, rdb, mainPool, reportsPool, m, log))
	handlers.RegisterOpenAPI(engine)

	// WriteTimeout lies outside REQUEST_TIMEOUT (checked at start).
	srv := server.New(engine, cfg.WriteTimeout, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	// ---- Admin: console, state feed, pprof (loopback by default) -------------
	if cfg.AdminAddr != "off" {
		recent, stopWatch := watchLocks(ctx, rdb, cfg.fillChannel())
		defer stopWatch() // before rdb closes
		adm := &admin{cache: c, pools: pools, breakers: breakers, metrics: m, rdb: rdb, log: log, token: cfg.AdminToken,
			settings: consoleSettings(cfg), reads: reads, hot: hot, recent: recent}
		stopAdmin, err := serveAdmin(cfg.AdminAddr, adm, log)
		if err != nil && !cfg.AdminAddrSet && errors.Is(err, syscall.EADDRINUSE) {
			// The default port is taken, most likely by another instance on
			// this host: that must not stop this one from serving. An
			// address the user chose still fails below.
			log.Warn("admin: default address busy, using a free loopback port", "busy", cfg.AdminAddr)
			stopAdmin, err = serveAdmin("127.0.0.1:0", adm, log)
		}
		if err != nil {
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
