package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// TestClusterConfigErrors: a cluster setting that cannot work stops the
// start with one line naming the variable.
func TestClusterConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"seed without port", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1"}, "REDIS_CLUSTER_ADDRS"},
		{"seed port not a number", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000,10.0.0.2:x"}, "REDIS_CLUSTER_ADDRS"},
		{"tracking on a cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000", "L1_INVALIDATION": "tracking"}, "L1_INVALIDATION"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(envOf(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.wantVar) {
				t.Fatalf("loadConfig(%v): got %v, want an error naming %s", tc.env, err, tc.wantVar)
			}
		})
	}
	cfg, err := loadConfig(envOf(map[string]string{"REDIS_CLUSTER_ADDRS": " 10.0.0.1:7000, [::1]:7001 ", "L1_INVALIDATION": "pubsub"}))
	if err != nil || len(cfg.RedisClusterAddrs) != 2 || cfg.RedisClusterAddrs[1] != "[::1]:7001" {
		t.Errorf("two seeds: got %q, %v, want both", cfg.RedisClusterAddrs, err)
	}
	// Tracking with the L1 off tracks nothing: no reason to refuse.
	if _, err := loadConfig(envOf(map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000", "L1_INVALIDATION": "tracking", "L1_TTL": "0"})); err != nil {
		t.Errorf("tracking with L1 off on a cluster: got %v, want nil", err)
	}
}

// TestLimiterOnBothBackends: two instances (own clients, own stores) share
// one rate-limit budget on one Redis and on the cluster alike.
func TestLimiterOnBothBackends(t *testing.T) {
	backends := []struct {
		name   string
		client func() redis.UniversalClient
	}{
		{"single", func() redis.UniversalClient { return dbtest.NewRedis(t, redisDB) }},
		{"cluster", func() redis.UniversalClient { return rediscluster.NewClient(t) }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rate := limiter.Rate{Period: time.Minute, Limit: 5}
			a := limiter.New(newLimitStore(be.client(), "", dbtest.Logger(t)), rate)
			b := limiter.New(newLimitStore(be.client(), "", dbtest.Logger(t)), rate)
			ctx := context.Background()
			ip := "test-" + dbtest.Unique()
			t.Cleanup(func() { be.client().Del(ctx, "ratelimit:"+ip) })
			reached := 0
			for i := range 10 {
				lim := a
				if i%2 == 1 {
					lim = b
				}
				lc, err := lim.Get(ctx, ip)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if lc.Reached {
					reached++
				}
			}
			if reached != 5 {
				t.Errorf("got %d of 10 requests over the limit, want 5 (one budget of 5 for both instances)", reached)
			}
			if n := be.client().Exists(ctx, "ratelimit:"+ip).Val(); n != 1 {
				t.Errorf("counter ratelimit:%s in Redis: got %d, want 1 (else the budget was per instance)", ip, n)
			}
		})
	}
}
