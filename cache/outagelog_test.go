package cache_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestOutageWarningsAreRateLimited: with Redis unreachable every request
// takes the degraded path, but the log gets at most one line a second of
// it, not one per request.
func TestOutageWarningsAreRateLimited(t *testing.T) {
	t.Parallel()
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	link.SetDown(true)
	rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs dbtest.LogBuffer
	c := cache.New(context.Background(), rdb, cache.Config{Mode: cache.ModeLock}, slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(c.Close)
	var loads atomic.Int64
	start := time.Now()
	for i := range 100 {
		if _, err := c.Fetch(context.Background(), newPrefix()+"{p}", slowLoad(&loads, 0, "v")); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	seconds := int(time.Since(start)/time.Second) + 1
	if n := logs.Count("cache: redis read failed"); n == 0 || n > seconds+1 {
		t.Errorf("%d outage lines for 100 requests in %d s, want 1 to %d", n, seconds, seconds+1)
	}
}
