package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/repo"
)

// trackingBase is the client options the L1's tracking connection is
// cloned from with L1_INVALIDATION=tracking, or nil to keep pub/sub.
// Tracking is per server: checkCluster refuses it on a cluster.
func trackingBase(cfg config, rdb redis.UniversalClient) *redis.Options {
	if !cfg.L1Tracking {
		return nil
	}
	return redisconn.TrackingBase(rdb)
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
