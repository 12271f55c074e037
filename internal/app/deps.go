package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/repo"
)

// deps is everything the server is built from: two PostgreSQL pools (so
// reports can never starve checkout), Redis behind its breaker, the cache
// and the repositories on top. openDeps opens them in dependency order and
// close shuts them in the reverse one.
type deps struct {
	cfg          config.Config
	log          *slog.Logger
	mainPool     *db.Pool
	reportsPool  *db.Pool
	rdb          redis.UniversalClient
	redisBreaker *redisconn.Breaker
	hot          *hotkeys.Detector // nil with HOT_KEY_DETECT=false
	cache        *cache.Cache
	products     *repo.Products
	orders       *repo.Orders
	reports      *repo.Reports

	closers []func() // run last-first by close
}

// openDeps opens every dependency. On an error it closes what it opened.
func openDeps(ctx context.Context, cfg config.Config, tr *telemetry.Tracing, log *slog.Logger) (*deps, error) {
	d := &deps{cfg: cfg, log: log}
	if err := d.open(ctx, tr); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *deps) open(ctx context.Context, tr *telemetry.Tracing) error {
	if err := d.openDatabase(ctx, tr); err != nil {
		return err
	}
	if err := d.openRedis(ctx, tr); err != nil {
		return err
	}
	return d.openCache(ctx, tr)
}

// openDatabase opens the main pool, checks its sizing, migrates, then
// opens the reports pool.
func (d *deps) openDatabase(ctx context.Context, tr *telemetry.Tracing) error {
	cfg, log := d.cfg, d.log
	// A database that does not answer yet is waited for, as /readyz says
	// (503, starting), rather than exiting: during a shared outage every
	// instance (re)started would otherwise crash-loop, and its restart
	// back-off outlast the outage. A signal ends the wait (run.go).
	mainCfg := dbConfig(cfg, "main", cfg.MainMaxConns, tr.QueryTracer(), log)
	mainCfg.WaitForServer = func(attempt int, err error) {
		log.Warn("database not reachable yet: waiting for it; /readyz answers 503 until then", "attempt", attempt, "err", err)
	}
	main, err := db.Open(ctx, mainCfg)
	if err != nil {
		return err
	}
	d.mainPool = main
	d.closers = append(d.closers, main.Close)
	if main.LockTimeout() <= 0 {
		// Only behind a pooler, which cannot carry the pool's own.
		log.Warn("behind a pooler PostgreSQL sets no lock_timeout: a write that waits for a row another transaction holds ends at statement_timeout, which the breaker counts as an outage, so one held row can refuse every order; set lock_timeout beside statement_timeout (connect_query in pgbouncer.ini, or ALTER ROLE … SET lock_timeout)")
	}
	if err := checkPoolSizing(ctx, cfg, main, log); err != nil {
		return err
	}
	warnMaintenanceDB(ctx, main, log)
	// Migrations run once, under goose's advisory lock, before any traffic.
	// MIGRATE_ON_START=false leaves them to `api migrate up`.
	if cfg.MigrateOnStart {
		if err := migrate(ctx, cfg, main, log); err != nil {
			return err
		}
	} else if err := checkSchema(ctx, main, log); err != nil {
		return err
	}
	reports, err := db.Open(ctx, dbConfig(cfg, "reports", cfg.ReportsMaxConns, tr.QueryTracer(), log))
	if err != nil {
		return err
	}
	d.reportsPool = reports
	d.closers = append(d.closers, reports.Close)
	return nil
}

// openRedis connects Redis (one server or a cluster) and hooks its breaker
// in. An unreachable Redis is not fatal: the service answers from the
// database while Redis is away, and /readyz says so. A Redis that answers
// and refuses REDIS_URL's password or database is: the start fails, as it
// does for a wrong DATABASE_URL, instead of serving degraded for good.
func (d *deps) openRedis(ctx context.Context, tr *telemetry.Tracing) error {
	rdb, err := redisconn.Open(redisConfig(d.cfg))
	if err != nil {
		return fmt.Errorf("config: REDIS_URL: %w", err)
	}
	d.rdb = rdb
	d.closers = append(d.closers, func() { _ = rdb.Close() })
	if err := tr.InstrumentRedis(rdb); err != nil {
		return err
	}
	d.redisBreaker = redisconn.NewBreaker(rdb, breakerConfig(d.cfg, d.log)) // hooks itself into rdb
	d.closers = append(d.closers, d.redisBreaker.Close)                     // before rdb.Close: it probes through rdb
	if err := rdb.Ping(ctx).Err(); err != nil {
		if redisconn.IsMisconfigured(err) {
			return fmt.Errorf("redis refused REDIS_URL's credentials or database, or REDIS_CLUSTER_ADDRS (fix them; waiting cannot): %w", err)
		}
		d.log.Warn("redis not reachable at start", "err", err)
	}
	return nil
}

// openCache builds the cache and the repositories on the pools and Redis.
// Entries are always signed: with CACHE_SIGNING_KEY, by it; without, by the
// key the fleet keeps in PostgreSQL (repo.CacheSigningKey), never in Redis.
func (d *deps) openCache(ctx context.Context, tr *telemetry.Tracing) error {
	cfg, log := d.cfg, d.log
	key := cfg.CacheSigningKey
	if len(key) == 0 {
		var err error
		if key, err = repo.CacheSigningKey(ctx, d.mainPool); err != nil {
			return err
		}
	}
	// A load may take one pool acquire plus one statement, counted from
	// taking the lock (the time budget, internal/config/budget.go).
	if !cfg.LockCoversDeadHolder {
		log.Warn("LOCK_WAIT ends before a dead holder's LOCK_TTL plus one load: waiters give up early (LOCK_WAITER decides what they answer)",
			"lock_wait", cfg.LockWait, "lock_ttl", cfg.LockTTL, "load", cfg.LoadTimeout)
	}
	if cfg.HTTPMaxAgeAsked > 0 {
		log.Warn("HTTP_MAX_AGE is longer than the cache keeps a product fresh: answers say the cache's max-age, so no copy outlives it",
			"http_max_age", cfg.HTTPMaxAgeAsked, "max_age", cfg.HTTPCache.MaxAge)
	}
	if cfg.HotKeyCopies > 1 && len(cfg.RedisClusterAddrs) == 0 {
		// Allowed (a test of the copies' path on one server), but spreads
		// nothing: every copy lands on the one server, costing a write each.
		log.Warn("HOT_KEY_COPIES > 1 without REDIS_CLUSTER_ADDRS: the copies share one Redis server and spread no reads",
			"hot_key_copies", cfg.HotKeyCopies)
	}
	if cfg.L1Tracking && cfg.CacheNamespace == "" && cfg.L1TTL > 0 {
		// Not wrong, only dearer when another app shares the server.
		log.Info("L1_INVALIDATION=tracking without CACHE_NAMESPACE: a change to a product key in any logical database of this Redis server drops this app's L1 copy of that key (a reload, never a stale answer); set CACHE_NAMESPACE to keep apps on one server apart")
	}
	d.hot = newHotKeys(cfg)
	replicas := newReplicaReads(cfg, d.rdb, d.redisBreaker) // nil unless REDIS_REPLICA_READS
	if replicas != nil {
		d.closers = append(d.closers, func() { _ = replicas.Close() })
	}
	cc := cacheConfig(cfg, key, d.rdb, d.hot, replicas, tr.Provider())
	// A miss the main pool would refuse is refused before its Redis lock,
	// and one it admits holds its place there (db/claim.go): a burst is
	// refused at memory speed, not after four round trips each.
	cc.Admit = d.mainPool.Claim
	d.cache = cache.New(ctx, d.rdb, cc, log)
	d.closers = append(d.closers, d.cache.Close)
	d.products = repo.NewProducts(d.mainPool, d.cache, log)
	if d.hot != nil {
		d.products.CountReads(d.hot)
	}
	if cfg.UnknownIDFilter { // penetration defence (UNKNOWN_ID_FILTER)
		// Loaded in the background: start-up and requests never wait for it.
		d.closers = append(d.closers, d.products.FilterUnknownIDs(float64(cfg.UnknownIDLookups)))
	}
	d.orders = repo.NewOrders(d.mainPool, log)
	d.reports = repo.NewReports(d.reportsPool)
	return nil
}

// breakers names every breaker's snapshot, for readiness, metrics and the
// console.
func (d *deps) breakers() map[string]func() breaker.Snapshot {
	return map[string]func() breaker.Snapshot{
		"postgres_main": d.mainPool.Breaker, "postgres_reports": d.reportsPool.Breaker, "redis": d.redisBreaker.Snapshot,
	}
}

// close shuts everything openDeps opened, last opened first.
func (d *deps) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}
