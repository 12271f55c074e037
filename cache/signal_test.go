package cache_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestFillSignalWakesWaiters: while instance A loads 20 cold keys, instance
// B's waiters for them are woken by A's fill signals rather than finding the
// values at a poll; with signals on another channel, they only poll. A's
// loads end only once B has found every lock taken (or after 5 s), and B's
// first poll comes 2.5–5 s into its wait: a B that reached the lock after
// A's store (a starved machine delays goroutines by more than a fixed load
// time) would find the value without waiting, and the count would measure
// the machine instead of the signal.
func TestFillSignalWakesWaiters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		sameChannel bool
		wantWakes   func(int64) bool
	}{
		{"signals", true, func(n int64) bool { return n >= 15 }},
		{"no signals", false, func(n int64) bool { return n == 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ch := "filled:" + dbtest.Unique()
			cfgA := cache.Config{Mode: cache.ModeLock, FillChannel: ch, LockTTL: 10 * time.Second, LockWait: 10 * time.Second}
			cfgB := cache.WithFirstPoll(cfgA, 5*time.Second)
			if !tc.sameChannel {
				cfgB.FillChannel = "filled:" + dbtest.Unique()
			}
			a := newCache(t, dbtest.NewRedis(t, redisDB), cfgA)
			b := newCache(t, dbtest.NewRedis(t, redisDB), cfgB)
			prefix := newPrefix()
			var loads atomic.Int64
			var wg sync.WaitGroup
			for i := range 20 {
				key := fmt.Sprintf("%s{%d}", prefix, i)
				started := make(chan struct{})
				wg.Go(func() {
					_, _ = a.Fetch(ctx, key, func(ctx context.Context) ([]byte, error) {
						close(started)
						dbtest.Eventually(5*time.Second, func() bool { return b.Stats().LockContended >= 20 })
						return slowLoad(&loads, 100*time.Millisecond, "v")(ctx)
					})
				})
				wg.Go(func() {
					<-started // A holds the lock
					if r, err := b.Fetch(ctx, key, slowLoad(&loads, 0, "b")); err != nil || string(r.Value) != "v" {
						t.Errorf("B: %q, %v; want A's value", r.Value, err)
					}
				})
			}
			wg.Wait()
			if n := b.Stats().LockContended; n < 20 {
				t.Errorf("B found %d of 20 locks taken, want all (A's loads wait for them)", n)
			}
			if n := loads.Load(); n != 20 {
				t.Errorf("%d loads, want 20 (one per key)", n)
			}
			if n := b.Stats().SignalWakeups; !tc.wantWakes(n) {
				t.Errorf("B's waits ended by a signal: %d of 20", n)
			}
		})
	}
}

// TestStaleServedFromL1UntilRefreshed: in swr mode a stale value is kept in
// L1, so a burst during a slow refresh costs no Redis read; the refresh's
// fill evicts it on every instance long before the L1 TTL would.
func TestStaleServedFromL1UntilRefreshed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := cache.Config{Mode: cache.ModeSWR, SoftTTL: 100 * time.Millisecond, L1TTL: 5 * time.Second, FillChannel: "filled:" + dbtest.Unique()}
	// a refreshes, b only reads.
	a := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	b := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	key := newPrefix() + "{p:1}"
	var loads atomic.Int64
	if _, err := a.Fetch(ctx, key, slowLoad(&loads, 0, "old")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // past the soft TTL
	refreshing := make(chan struct{})
	slowRefresh := func(ctx context.Context) ([]byte, error) {
		close(refreshing)
		return slowLoad(&loads, 500*time.Millisecond, "new")(ctx)
	}
	if r, err := a.Fetch(ctx, key, slowRefresh); err != nil || r.Status != cache.Stale {
		t.Fatalf("A after soft expiry: %s, %v; want STALE", r.Status, err)
	}
	<-refreshing
	if r, err := b.Fetch(ctx, key, nil); err != nil || r.Status != cache.Stale || r.L1 {
		t.Fatalf("B first read: %s L1=%v %v; want STALE from Redis", r.Status, r.L1, err)
	}
	for i := range 50 {
		r, err := b.Fetch(ctx, key, nil)
		if string(r.Value) == "new" {
			break // the refresh landed meanwhile
		}
		if err != nil || r.Status != cache.Stale || !r.L1 {
			t.Fatalf("B read %d during the refresh: %s L1=%v %v; want STALE from L1", i, r.Status, r.L1, err)
		}
	}
	if !dbtest.Eventually(2*time.Second, func() bool {
		r, _ := b.Fetch(ctx, key, nil)
		return string(r.Value) == "new"
	}) {
		t.Errorf("B never saw the refreshed value within 2 s (its L1 TTL is 5 s): the fill did not evict its stale copy")
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (the first and one refresh)", n)
	}
}
