package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/repo"
)

// newRedis builds the one Redis client the whole app shares (cache, locks,
// fenced writes, job markers, rate limits, invalidation, breaker): a
// Cluster client when REDIS_CLUSTER_ADDRS is set, else a client of
// REDIS_URL. Both honour the caller's deadline (ContextTimeoutEnabled) and
// give up fast when Redis is gone, so an outage costs milliseconds, not
// socket timeouts; the cluster's per-node pools get the same settings. On
// a cluster, credentials and TLS still come from REDIS_URL (its host and
// logical database are unused: a cluster has database 0 only).
func newRedis(cfg config) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("config: REDIS_URL: %w", err)
	}
	const (
		dial       = time.Second
		readWrite  = 500 * time.Millisecond
		poolWait   = time.Second
		maxRetries = 1
	)
	if len(cfg.RedisClusterAddrs) == 0 {
		opt.ContextTimeoutEnabled = true
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = dial, readWrite, readWrite, poolWait
		opt.MaxRetries = maxRetries
		return redis.NewClient(opt), nil
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    cfg.RedisClusterAddrs,
		Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		ContextTimeoutEnabled: true,
		DialTimeout:           dial, ReadTimeout: readWrite, WriteTimeout: readWrite, PoolTimeout: poolWait,
		// MaxRedirects bounds MOVED/ASK hops, not retries of a failed
		// command, which MaxRetries bounds as on one server; PoolSize
		// (per node) keeps go-redis's default, as on one server.
		MaxRetries: maxRetries,
	})
	// A dead master sends no MOVED: without this, go-redis would learn of
	// its promoted replica only at its next periodic reload (60 s).
	cc.AddHook(cache.ReloadOnOutage(cc))
	return cc, nil
}

// trackingOptions are the options of the connection that hears Redis's
// CLIENT TRACKING invalidations, or nil to keep pub/sub. Tracking is per
// server: checkCluster refuses it on a cluster.
func trackingOptions(cfg config, rdb redis.UniversalClient) *redis.Options {
	c, ok := rdb.(*redis.Client)
	if !cfg.L1Tracking || !ok {
		return nil
	}
	return c.Options()
}

// checkCluster refuses, at start, a configuration that would break on a
// Redis Cluster. Key schemes are checked even on one server: a scheme is
// chosen once and a move to a cluster must not find it broken.
//
//   - L1_INVALIDATION=tracking: CLIENT TRACKING reports only the keys of
//     the node a connection is on; one tracking connection per master
//     would still lose every report across a failover or reshard. On a
//     cluster L1 keeps pub/sub (PUBLISH reaches every node's subscribers).
//   - A product key whose lock or hot-key copies break the slot rules.
func (c config) checkCluster() error {
	if len(c.RedisClusterAddrs) > 0 && c.L1Tracking && c.L1TTL > 0 {
		return errors.New("config: L1_INVALIDATION: tracking works on one Redis server only, not with REDIS_CLUSTER_ADDRS " +
			"(each node reports only its own keys); use L1_INVALIDATION=pubsub, which reaches every node, or L1_TTL=0")
	}
	if err := cache.CheckKeyScheme(repo.Key(1), c.HotKeyCopies); err != nil {
		return fmt.Errorf("config: key scheme: %w", err)
	}
	return nil
}

// hostPorts reads a comma-separated list of host:port addresses.
func (p *envParser) hostPorts(name string) []string {
	var out []string
	for _, s := range splitList(p.getenv(name)) {
		host, port, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n <= 0 || n > 65535 {
			p.fail(name, s, "must be a comma-separated list of host:port seeds such as 10.0.0.1:7000")
			return nil
		}
		out = append(out, s)
	}
	return out
}
