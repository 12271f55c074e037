package app

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"

	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

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

// TestReplicaReadsClient: REDIS_REPLICA_READS builds a second cluster
// client that may read from replicas, picked at random (not by latency,
// go-redis issue #3023); none without the setting or on one server.
func TestReplicaReadsClient(t *testing.T) {
	t.Parallel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = cc.Close() })
	on := config.Config{RedisClusterAddrs: []string{"127.0.0.1:1"}, HotKey: config.HotKeySettings{ReplicaReads: true}}
	rc := newReplicaReads(on, cc, nil)
	if rc == nil {
		t.Fatal("REDIS_REPLICA_READS on a cluster: got no client")
	}
	t.Cleanup(func() { _ = rc.Close() })
	if o := rc.Options(); !o.ReadOnly || !o.RouteRandomly || o.RouteByLatency {
		t.Errorf("replica client: ReadOnly %v RouteRandomly %v RouteByLatency %v, want true true false", o.ReadOnly, o.RouteRandomly, o.RouteByLatency)
	}
	if o := cc.Options(); o.ReadOnly {
		t.Error("the main client became ReadOnly: every read (locks' double-check too) could hit a lagging replica")
	}
	if got := newReplicaReads(config.Config{HotKey: config.HotKeySettings{}}, cc, nil); got != nil {
		t.Error("without REDIS_REPLICA_READS: got a client, want none")
	}
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = single.Close() })
	if got := newReplicaReads(on, single, nil); got != nil {
		t.Error("on one server: got a client, want none")
	}
}
