package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestStatsCountJoinersOnly: of n callers sharing one load, n-1 waited on
// someone else's; the one that ran it is not a shared wait.
func TestStatsCountJoinersOnly(t *testing.T) {
	t.Parallel()
	const n = 10
	c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeSingleflight})
	key := newPrefix() + "{s:1}"
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.Fetch(context.Background(), key, slowLoad(&calls, 300*time.Millisecond, "v")); err != nil {
				t.Errorf("Fetch: %v", err)
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	if calls.Load() != 1 || st.Loads != 1 {
		t.Fatalf("loads: got %d (stats %d), want 1", calls.Load(), st.Loads)
	}
	if st.SharedWaits != n-1 || st.Misses != n {
		t.Errorf("got %d shared waits and %d misses, want %d and %d", st.SharedWaits, st.Misses, n-1, n)
	}
}
