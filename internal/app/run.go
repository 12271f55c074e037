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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/logbuf"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/server"
	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/middleware"
)

// Main is the whole program behind main.go: it applies the process-wide
// GC setting, then runs the command in args (none: serve HTTP) and returns
// the process's exit code, with any error written to stderr.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	setGCPercent(getenv)
	if err := command(ctx, args, getenv, stdout); err != nil {
		if len(args) == 0 {
			// The server's log is JSON on stdout: its last line says why
			// it stopped, for whatever reads the log (the line on stderr
			// is for a person at a terminal).
			slog.New(slog.NewJSONHandler(stdout, nil)).Error("stopped with an error", "err", err.Error())
		}
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
	redisconn.SetLogger(log)   // go-redis's logger is one per process
	telemetry.SetErrorLog(log) // and so is OpenTelemetry's error handler
	// Tracing next, so its deferred shutdown runs last and flushes the
	// spans of everything closed before it.
	tr, err := telemetry.NewTracing(ctx, cfg.Tracing)
	if err != nil {
		return err
	}
	defer flushTracing(tr, log)
	if tr.Provider() != nil {
		log.Info("tracing on: spans exported over OTLP/HTTP", "endpoint", tr.Endpoint())
	}
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	// Bind first: a busy port fails in milliseconds, not after the
	// database connect and migrations. Serve at once, too: until the API
	// exists, handlers.Starting answers (liveness yes, readiness no, the
	// rest 503), so no accepted connection waits for the start.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s (HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	// Said at once: the start may wait long for its database, and a log
	// silent until "listening" reads as a port not yet open.
	log.Info("port bound: starting, every route but /healthz answers 503 until ready", "addr", ln.Addr().String())
	handler := newSwapHandler(handlers.Starting())
	// WriteTimeout lies outside REQUEST_TIMEOUT (checked at start).
	srv := server.New(handler, cfg.WriteTimeout, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	// Every request's context descends from requests, so that a shutdown
	// past SHUTDOWN_TIMEOUT can cut the ones still running (shutdown).
	requests, cutRequests := context.WithCancel(context.Background())
	defer cutRequests()
	srv.BaseContext = func(net.Listener) context.Context { return requests }
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	serving := false // from then on shutdown stops the server
	defer func() {
		if !serving { // a start that failed: close it, and wait for Serve
			_ = srv.Close()
			<-serveErr
		}
	}()

	d, err := openDeps(ctx, cfg, tr, log)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// A signal while the start waited (a slow database, a lock):
			// asked to stop, it stopped; not a failure of the database.
			log.Info("stopped while starting", "waited_for", err.Error())
			return nil
		}
		return err
	}
	defer d.close()
	m := telemetry.NewMetrics(d.cache, d.pools(), d.breakers())
	m.Register(hotKeysCollector{d.hot}, telemetry.RefusedPayloads(d.products.RefusedEntries), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "stampede_unknown_id_filter_loaded",
		Help: "1 once the unknown-id filter answers (or when it is off); 0 while it loads in the background and every id takes the normal path.",
	}, func() float64 {
		if d.products.FilterLoaded() {
			return 1
		}
		return 0
	}))
	publicMetrics, stopMetrics, err := telemetry.ServeMetrics(cfg.MetricsAddr, m.Handler(), log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	s, err := newServer(d, m, publicMetrics, traceRequests(tr, cfg.Tracing.ServiceName), access)
	if err != nil {
		return err
	}
	if cfg.AdminAddr != "off" { // console, state feed, pprof (loopback by default)
		stopAdmin, err := startAdmin(ctx, d, m, s.reads)
		if err != nil {
			return err
		}
		defer stopAdmin()
	}
	handler.set(s.handler)
	serving = true

	// Liveness answers during warm-up; readiness waits for it. A signal
	// during warm-up goes straight to the shutdown: never ready, never
	// "listening".
	warm(ctx, d)
	if ctx.Err() == nil {
		s.health.MarkReady()
		log.Info("listening", "addr", ln.Addr().String(), "cache_mode", cfg.CacheMode,
			"l1_invalidation", l1Invalidation(cfg), "cache_namespace", cfg.CacheNamespace)
	}
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// A second SIGTERM or Ctrl-C while draining cuts the drain delay short
	// (in-flight requests still get SHUTDOWN_TIMEOUT): an operator at a
	// terminal, or a mistyped delay, is never stuck waiting it out.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	return shutdown(srv, s.health, serveErr, again, cutRequests, cfg, log)
}

// flushTracing flushes the spans still buffered, within 5 s.
func flushTracing(tr *telemetry.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("tracing: flush at shutdown failed", "err", err)
	}
}

// warm loads the warm-up list (HOT_KEYS) and keeps it fresh ahead of
// expiry, and loads the never-expiring STATIC_KEYS and keeps them repaired.
func warm(ctx context.Context, d *deps) {
	cfg, log, products := d.cfg, d.log, d.products
	if len(cfg.WarmKeys) > 0 {
		n, err := products.Warm(ctx, cfg.WarmKeys)
		logWarmed(log, "warm-up done", len(cfg.WarmKeys), n, err)
		products.KeepFresh(cfg.WarmKeys, refreshPeriod(cfg))
	}
	if len(cfg.StaticKeys) > 0 {
		n, err := products.Warm(ctx, cfg.StaticKeys)
		logWarmed(log, "static keys warmed", len(cfg.StaticKeys), n, err)
		products.RepairStatic(cfg.StaticKeys, cfg.StaticRepair)
	}
}

// logWarmed logs a warm-up's outcome: INFO when every key loaded, WARN
// with the error when some did not (an "err": null on success is noise).
func logWarmed(log *slog.Logger, msg string, keys, warmed int, err error) {
	if err != nil {
		log.Warn(msg, "keys", keys, "warmed", warmed, "err", err)
		return
	}
	log.Info(msg, "keys", keys, "warmed", warmed)
}

// shutdown drains: readiness goes 503 first so load balancers stop
// sending; after SHUTDOWN_DRAIN_DELAY (0 by default: set it to a few probe
// periods behind a load balancer) in-flight requests get up to
// SHUTDOWN_TIMEOUT to finish; a signal on again ends the delay early.
// Requests still running then are cut (cutRequests, then the connections
// closed after cutGrace), so the exit never waits for their deadlines.
// run's deferred closes follow: admin, metrics, cache (stops refreshers),
// Redis, pools, tracing, logs.
func shutdown(srv *http.Server, health *handlers.Health, serveErr <-chan error, again <-chan os.Signal, cutRequests context.CancelFunc, cfg config.Config, log *slog.Logger) error {
	log.Info("shutting down", "drain_delay", cfg.DrainDelay)
	health.Drain()
	delay := time.NewTimer(cfg.DrainDelay)
	defer delay.Stop()
	select {
	case <-delay.C:
	case sig := <-again:
		log.Info("second signal: drain delay cut short", "signal", sig.String())
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		// Their queries and waits end with their contexts (the pools then
		// close at once) and they answer 503; a request that cannot
		// answer, such as one still reading a body, loses its connection.
		log.Warn("shutdown timeout: requests in flight cut", "shutdown_timeout", cfg.ShutdownTimeout)
		cutRequests()
		gctx, gcancel := context.WithTimeout(context.Background(), cutGrace)
		defer gcancel()
		if srv.Shutdown(gctx) != nil {
			_ = srv.Close()
		}
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// cutGrace is how long requests cut at SHUTDOWN_TIMEOUT get to send their
// 503 before their connections are closed.
const cutGrace = 500 * time.Millisecond

// refreshPeriod keeps hot keys reloaded well before they could go stale.
func refreshPeriod(cfg config.Config) time.Duration {
	ttl := cfg.CacheSoftTTL
	if cfg.CacheMode != cache.ModeSWR {
		ttl = cfg.CacheTTL
	}
	return max(ttl/2, 100*time.Millisecond)
}

// l1Invalidation names how the L1 learns of changes, for the start's log.
func l1Invalidation(cfg config.Config) string {
	switch {
	case cfg.L1TTL <= 0:
		return "off (no L1)"
	case cfg.L1Tracking:
		return "tracking"
	}
	return "pubsub"
}
