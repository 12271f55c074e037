package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// checkPooler refuses a pooler setting that cannot work: behind PgBouncer in
// transaction pooling, goose's session advisory lock (which lets several
// instances start at once) would be taken on one server connection and
// released on another, so migrations need PostgreSQL itself.
func (c Config) checkPooler() error {
	if c.DBPooler.Behind() && c.DatabaseDirectURL == "" {
		return errors.New("config: DATABASE_DIRECT_URL: required with DB_POOLER=" + string(c.DBPooler) +
			": migrations hold a session advisory lock, which transaction pooling breaks; point it at PostgreSQL itself")
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

// checkTracking refuses L1_INVALIDATION=tracking on a Redis Cluster: CLIENT
// TRACKING reports only the keys of the node a connection is on, and one
// tracking connection per master would still lose every report across a
// failover or reshard. On a cluster the L1 keeps pub/sub (PUBLISH reaches
// every node's subscribers).
func (c Config) checkTracking() error {
	if len(c.RedisClusterAddrs) > 0 && c.L1Tracking && c.L1TTL > 0 {
		return errors.New("config: L1_INVALIDATION: tracking works on one Redis server only, not with REDIS_CLUSTER_ADDRS " +
			"(each node reports only its own keys); use L1_INVALIDATION=pubsub, which reaches every node, or L1_TTL=0")
	}
	return nil
}

// checkClusterDB refuses a logical database other than 0 in REDIS_URL with
// REDIS_CLUSTER_ADDRS: a cluster has database 0 only, so the number was
// dropped and two apps "kept apart by database" shared every key (each
// refusing the other's signed entries, or serving them with one signing
// key), while the channel names still carried the number and looked apart.
func (c Config) checkClusterDB() error {
	if len(c.RedisClusterAddrs) > 0 && c.RedisDB != 0 {
		return fmt.Errorf("config: REDIS_URL: names database %d, but a Redis Cluster (REDIS_CLUSTER_ADDRS) has database 0 only; "+
			"drop /%d from REDIS_URL and keep apps on one cluster apart with CACHE_NAMESPACE", c.RedisDB, c.RedisDB)
	}
	return nil
}
