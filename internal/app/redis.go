package app

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/repo"
)

// trackingBase is the client options the L1's tracking connection is
// cloned from with L1_INVALIDATION=tracking, or nil to keep pub/sub.
// Tracking is per server: config.Load refuses it on a cluster.
func trackingBase(cfg config.Config, rdb redis.UniversalClient) *redis.Options {
	if !cfg.L1Tracking {
		return nil
	}
	return redisconn.TrackingBase(rdb)
}

// loadConfig is config.Load plus the one check that needs the product key
// scheme: a product key whose lock or hot-key copies break Redis Cluster's
// slot rules is refused at start, even on one server, because a scheme is
// chosen once and a move to a cluster must not find it broken.
func loadConfig(getenv func(string) string) (config.Config, error) {
	c, err := config.Load(getenv)
	if err != nil {
		return c, err
	}
	if err := cache.CheckKeyScheme(repo.Key(1), c.HotKeyCopies); err != nil {
		return config.Config{}, fmt.Errorf("config: key scheme: %w", err)
	}
	return c, nil
}
