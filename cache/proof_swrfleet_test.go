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

// TestSWROneRefresherAcrossInstances: five instances (each its own Redis
// client) serve 200 concurrent reads of a key past its soft expiry. Every
// read is answered stale at once, and the refresh runs exactly once across
// the fleet: single-flight dedupes it inside an instance, the refresh's
// NX lock across instances. The loader blocks until all 200 reads have
// returned, so "at once" needs no clock.
func TestSWROneRefresherAcrossInstances(t *testing.T) {
	t.Parallel()
	const (
		instances  = 5
		concurrent = 200
		softTTL    = 300 * time.Millisecond
	)
	ctx := context.Background()
	cfg := cache.Config{Mode: cache.ModeSWR, SoftTTL: softTTL, LockWait: 2 * time.Second}
	fleet := make([]*cache.Cache, instances)
	for i := range fleet {
		fleet[i] = newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	}
	key := newPrefix() + "{swr:1}"
	var populate atomic.Int64
	if r, err := fleet[0].Fetch(ctx, key, slowLoad(&populate, 0, "old")); err != nil || string(r.Value) != "old" {
		t.Fatalf("populate: %q, %v", r.Value, err)
	}
	time.Sleep(softTTL + 50*time.Millisecond)

	gate := make(chan struct{})
	var loads [instances]atomic.Int64
	loadFor := func(i int) cache.LoadFunc {
		return dbtest.HeldLoad(&loads[i], gate, "new")
	}
	start := make(chan struct{})
	var stale atomic.Int64
	var wg sync.WaitGroup
	for n := range concurrent {
		wg.Go(func() {
			<-start
			i := n % instances
			r, err := fleet[i].Fetch(ctx, key, loadFor(i))
			if err == nil && string(r.Value) == "old" && r.Status == cache.Stale {
				stale.Add(1)
				return
			}
			t.Errorf("read %d on instance %d: %q %s %v, want old STALE", n, i, r.Value, r.Status, err)
		})
	}
	close(start)
	allReturnWhileHeld(t, &wg, gate, "stale reads")
	close(gate)
	if stale.Load() != concurrent {
		t.Errorf("%d of %d reads served stale, want all", stale.Load(), concurrent)
	}
	// Every instance sees the refreshed value, fresh, with no further load.
	for i, c := range fleet {
		var last cache.Result
		if !dbtest.Eventually(3*time.Second, func() bool {
			r, err := c.Fetch(ctx, key, loadFor(i))
			last = r
			return err == nil && string(r.Value) == "new" && r.Status == cache.Hit
		}) {
			t.Errorf("instance %d: got %q %s for 3s, want new HIT", i, last.Value, last.Status)
		}
	}
	var total int64
	var per []int64
	for i := range loads {
		total += loads[i].Load()
		per = append(per, loads[i].Load())
	}
	if total != 1 {
		t.Errorf("background loads across %d instances: %d (per instance %v), want exactly 1", instances, total, per)
	}
	var refreshes int64
	for _, c := range fleet {
		refreshes += c.Stats().Refreshes
	}
	if refreshes != 1 {
		t.Errorf("refreshes counted across the fleet: %d, want 1", refreshes)
	}
	t.Logf("loads per instance: %v", fmt.Sprint(per))
}

// TestSWRStaleReadsLeaveARefreshElsewhereAlone: while one instance
// refreshes a stale key, the other instances' stale reads do not each ask
// Redis for its lock again: one refused attempt marks the key as refreshed
// elsewhere for RefreshRetry (here as long as it may be, LockTTL: 5 s,
// longer than the test, so any retry is a failure).
// The reads come in waves, each after the last one's attempts are done.
func TestSWRStaleReadsLeaveARefreshElsewhereAlone(t *testing.T) {
	t.Parallel()
	const (
		instances = 5
		waves     = 4
		perWave   = 50
		softTTL   = 300 * time.Millisecond
	)
	ctx := context.Background()
	cfg := cache.Config{Mode: cache.ModeSWR, SoftTTL: softTTL, LockWait: 2 * time.Second, LockTTL: 5 * time.Second, RefreshRetry: 5 * time.Second}
	fleet := make([]*cache.Cache, instances)
	for i := range fleet {
		fleet[i] = newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	}
	key := newPrefix() + "{swr:elsewhere}"
	var populate, loads atomic.Int64
	if _, err := fleet[0].Fetch(ctx, key, slowLoad(&populate, 0, "old")); err != nil {
		t.Fatalf("populate: %v", err)
	}
	time.Sleep(softTTL + 50*time.Millisecond)

	gate := make(chan struct{})
	defer close(gate)
	// Instance 0 starts the one refresh, held until the test ends.
	if r, err := fleet[0].Fetch(ctx, key, dbtest.HeldLoad(&loads, gate, "new")); err != nil || r.Status != cache.Stale {
		t.Fatalf("first stale read: %s %v, want STALE", r.Status, err)
	}
	if !dbtest.Eventually(5*time.Second, func() bool { return loads.Load() == 1 }) {
		t.Fatal("the refresh never started")
	}
	for range waves {
		var wg sync.WaitGroup
		for n := range perWave {
			wg.Go(func() {
				c := fleet[1+n%(instances-1)]
				if r, err := c.Fetch(ctx, key, dbtest.HeldLoad(&loads, gate, "new")); err != nil || r.Status != cache.Stale {
					t.Errorf("stale read: %s %v, want STALE", r.Status, err)
				}
			})
		}
		wg.Wait()
		time.Sleep(50 * time.Millisecond) // the wave's refresh attempts end (a bound below holds whatever their timing)
	}
	var contended int64
	for _, c := range fleet {
		contended += c.Stats().LockContended
	}
	// One refused attempt per other instance; a read racing the end of its
	// instance's attempt may make a second.
	if max := int64(2 * (instances - 1)); contended > max {
		t.Errorf("lock attempts refused across the fleet: %d for %d stale reads, want ≤ %d", contended, waves*perWave, max)
	}
	if got := loads.Load(); got != 1 {
		t.Errorf("loads: %d, want the one refresh", got)
	}
}
