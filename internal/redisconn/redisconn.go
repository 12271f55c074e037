// Package redisconn owns the go-redis client, as package db owns pgx: it
// builds the one client the app shares, from a URL or a Cluster's seeds, and
// the hooks and connections around it. It protects against a Redis outage
// costing every caller a socket timeout (short timeouts, one retry, and a
// circuit breaker that refuses in microseconds while Redis is down), a dead
// Cluster master going unnoticed for go-redis's 60 s topology reload
// (ReloadOnOutage), go-redis's own log lines escaping the app's JSON log as
// plain text (SetLogger), and a CLIENT TRACKING connection that goes silent
// or loses its tracking across a reconnect (Tracking).
package redisconn

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config says which Redis to use and how long to wait for it. The zero
// value of each timeout picks its default.
type Config struct {
	// URL is the server's redis:// or rediss:// URL: address, credentials,
	// TLS and logical database. With ClusterAddrs, only its credentials and
	// TLS are used (a cluster has database 0 only).
	URL string
	// ClusterAddrs, when set, are seed host:port addresses of a Redis
	// Cluster: Open returns a Cluster client instead of a client of URL.
	ClusterAddrs []string
	// DialTimeout bounds one connection attempt; default 1 second.
	DialTimeout time.Duration
	// IOTimeout bounds one read and one write on a connection; default
	// 500 ms.
	IOTimeout time.Duration
	// PoolTimeout bounds the wait for a free connection when all are busy;
	// default 1 second.
	PoolTimeout time.Duration
}

// maxRetries is how often a failed command is retried: once, so a
// connection closed under it costs one more try, and a dead Redis no more.
const maxRetries = 1

// dialAttempts is how often one dial is tried: once. go-redis by default
// tries five times, 100 ms apart, each with the whole dial timeout: a
// stopped Redis held every request about 0.4 s per command (1.6 s for a
// read, with its rate-limit lease) and a blackholed one 5 s, before the
// breaker had seen a single failure. The command's one retry and the
// breaker are the retry policy; a dial is not retried inside them.
const dialAttempts = 1

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, time.Second)
	def(&c.IOTimeout, 500*time.Millisecond)
	def(&c.PoolTimeout, time.Second)
	return c
}

// Open builds the one Redis client the whole app shares (cache, locks,
// fenced writes, job markers, rate limits, invalidation, breaker): a
// Cluster client when cfg.ClusterAddrs is set, else a client of cfg.URL.
// Both honour the caller's deadline (ContextTimeoutEnabled) and give up fast
// when Redis is gone, so an outage costs milliseconds, not socket timeouts;
// the cluster's per-node pools get the same settings, and its client reloads
// the slot map on every outage (ReloadOnOutage). Open does not connect: the
// first command does.
func Open(cfg Config) (redis.UniversalClient, error) {
	cfg = cfg.withDefaults()
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: parse url: %w", err)
	}
	if len(cfg.ClusterAddrs) == 0 {
		opt.ContextTimeoutEnabled = true
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = cfg.DialTimeout, cfg.IOTimeout, cfg.IOTimeout, cfg.PoolTimeout
		opt.MaxRetries, opt.DialerRetries = maxRetries, dialAttempts
		return redis.NewClient(opt), nil
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    cfg.ClusterAddrs,
		Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.DialTimeout, ReadTimeout: cfg.IOTimeout, WriteTimeout: cfg.IOTimeout, PoolTimeout: cfg.PoolTimeout,
		// MaxRedirects bounds MOVED/ASK hops, not retries of a failed
		// command, which MaxRetries bounds as on one server; PoolSize
		// (per node) keeps go-redis's default, as on one server.
		MaxRetries: maxRetries, DialerRetries: dialAttempts,
	})
	// A dead master sends no MOVED: without this, go-redis would learn of
	// its promoted replica only at its next periodic reload (60 s).
	cc.AddHook(ReloadOnOutage(cc))
	return cc, nil
}
