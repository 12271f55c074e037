package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestQuotaSharedByTheFleet: three instances (own clients and caches, one
// namespace) asking 300 times at once for a quota of 10 per second get at
// most 10 per calendar second between them; with Redis cut, each falls
// back to 10 of its own, quickly and without an error.
func TestQuotaSharedByTheFleet(t *testing.T) {
	t.Parallel()
	const n, instances, asks = 10, 3, 300
	ctx := context.Background()
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	ns := dbtest.Namespace(t, redisDB)
	quotas := make([]*cache.Quota, instances)
	for i := range quotas {
		rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = rdb.Close() })
		quotas[i] = newCache(t, rdb, cache.Config{Mode: cache.ModeLock, Namespace: ns}).NewQuota("q", n)
	}
	for _, tc := range []struct {
		name      string
		down      bool
		perWindow int64 // most allowed per calendar second touched
		least     int64
	}{
		{"shared", false, n, 1},
		{"redis cut", true, instances * n, instances * n}, // each its own, fully used
	} {
		link.SetDown(tc.down)
		time.Sleep(1100 * time.Millisecond) // every local limiter full again
		var allowed atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for i := range asks {
			wg.Go(func() {
				if quotas[i%instances].Allow(ctx) {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		windows := time.Now().Unix() - start.Unix() + 1
		if got := allowed.Load(); got > tc.perWindow*windows || got < tc.least {
			t.Errorf("%s: %d of %d allowed in %d calendar seconds, want %d to %d", tc.name, got, asks, windows, tc.least, tc.perWindow*windows)
		}
	}
	link.SetDown(false)
}
