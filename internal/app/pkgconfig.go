package app

import (
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/repo"
)

// This file fills the Config of packages db, breaker, redisconn and cache
// from config.Config, each in one method, in the package's own names and units: no
// other code in package main sets a field of db.Config, db.Sizing,
// breaker.Config, redisconn.Config or cache.Config.

// dbConfig is the db.Config of one pool. "main" and "reports" serve
// requests (the bulkheads: reports can never starve checkout); "migrate"
// reaches PostgreSQL itself behind a pooler (dbpooler.go); any other name
// is a one-shot command's pool on DATABASE_URL. tracer, when not nil, sees
// every query.
func dbConfig(c config.Config, name string, maxConns int, tracer pgx.QueryTracer, log *slog.Logger) db.Config {
	dc := db.Config{
		URL: c.DatabaseURL, Name: name, MaxConns: int32(maxConns), // #nosec G115 -- loadConfig caps it at MaxInt32
		AcquireTimeout: c.AcquireTimeout, IdleTimeout: c.IdleTimeout, StatementTimeout: c.StmtTimeout,
		Pooler: c.DBPooler, Admission: c.Admission, Breaker: breakerConfig(c, log), Tracer: tracer,
	}
	switch name {
	case "main":
		dc.ReservedCritical = c.CheckoutReserved // checkout waits for one query at most, never behind queued reads
		dc.Prepare = repo.Statements()           // a cold key's load is one round trip
	case "reports":
		if c.DatabaseReadURL != "" {
			dc.URL = c.DatabaseReadURL     // reports tolerate a replica's lag
			dc.FallbackURL = c.DatabaseURL // and go to the primary while the replica is gone
			dc.OnFallback = func(on bool, addr string) {
				if on {
					log.Warn("reports pool: the replica (DATABASE_READ_URL) refused a new connection; reports go to the primary until it answers again", "server", addr)
					return
				}
				log.Info("reports pool: the replica (DATABASE_READ_URL) answers again; new reports connections go to it", "server", addr)
			}
		}
	case "migrate":
		dc.URL, dc.Pooler = c.DatabaseDirectURL, db.PoolerNone
	}
	return dc
}

// breakerConfig is the one breaker policy of the PostgreSQL pools and the
// Redis client, both configured through it; each names its breaker and
// brings its own probe.
func breakerConfig(c config.Config, log *slog.Logger) breaker.Config {
	return breaker.Config{
		Failures: uint32(c.BreakerFailures), OpenMin: c.BreakerOpenMin, OpenMax: c.BreakerOpenMax, // #nosec G115 -- loadConfig caps it at MaxInt32
		OnStateChange: func(name string, from, to breaker.State) {
			log.Warn("breaker state", "breaker", name, "from", from.String(), "to", to.String())
		},
	}
}

// sizing is the fleet's connection budget for db.CheckSizing.
func sizing(c config.Config) db.Sizing {
	return db.Sizing{
		Instances:   c.ExpectedInstances,
		PerInstance: c.MainMaxConns + c.ReportsMaxConns,
		Headroom:    c.PoolHeadroom,
	}
}

// redisConfig is the Redis client's configuration, from REDIS_URL and
// REDIS_CLUSTER_ADDRS; its timeouts keep redisconn's defaults.
func redisConfig(c config.Config) redisconn.Config {
	return redisconn.Config{URL: c.RedisURL, ClusterAddrs: c.RedisClusterAddrs}
}

// cacheConfig is the read-through cache's configuration. key signs the
// entries (CACHE_SIGNING_KEY, or the fleet's key kept in PostgreSQL), whose
// versions are the products' updated_at (replays refused). hot (nil with
// HOT_KEY_DETECT=false) picks the keys that get copies and the longer L1
// TTL; replicas (nil unless REDIS_REPLICA_READS) serves their copies.
func cacheConfig(c config.Config, key []byte, rdb redis.UniversalClient, hot *hotkeys.Detector, replicas *redis.ClusterClient, tp trace.TracerProvider) cache.Config {
	watchdog := cache.WatchdogOn
	if !c.LockWatchdog { // LOCK_WATCHDOG=false: the lab shows what it prevents
		watchdog = cache.WatchdogOff
	}
	return cache.Config{
		Mode: c.CacheMode, TTL: c.CacheTTL, SoftTTL: c.CacheSoftTTL, NegativeTTL: c.CacheNegTTL,
		LockTTL: c.LockTTL, LockWait: c.LockWait, LoadTimeout: c.LoadTimeout, Watchdog: watchdog, Waiter: c.LockWaiter,
		XFetchBeta: c.XFetchBeta, L1TTL: c.L1TTL, L1Size: c.L1Size, Copies: c.HotKeyCopies, TTLJitter: c.TTLJitter,
		Tracking: trackingBase(c, rdb), TrackPrefixes: []string{repo.KeyPrefix},
		Namespace: c.Namespace(), Channel: c.InvalidationChannel(), FillChannel: c.FillChannel(),
		Static: repo.Keys(c.StaticKeys), StaticTTL: c.StaticTTL, TracerProvider: tp,
		Hot: hotSet(hot), HotL1TTL: c.HotKey.L1TTL, ReplicaReads: replicaReads(replicas),
		OutageTTL: c.OutageTTL(), SigningKey: key, Version: repo.EntryVersion,
	}
}
