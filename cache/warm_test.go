package cache_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestWarmSharesLoadsAcrossInstances: two instances warming the same keys
// at the same moment load each key once, and a second warm-up costs none.
func TestWarmSharesLoadsAcrossInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := newPrefix()
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = prefix + "{w:" + string(rune('a'+i)) + "}"
	}
	var calls atomic.Int64
	loader := func(string) cache.LoadFunc { return slowLoad(&calls, 20*time.Millisecond, "v") }

	var wg sync.WaitGroup
	start := time.Now()
	for range 2 {
		c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeLock})
		wg.Go(func() {
			if n, err := c.Warm(ctx, keys, loader, 100, 10); err != nil || n != len(keys) {
				t.Errorf("Warm: got %d, %v, want %d, nil", n, err, len(keys))
			}
		})
	}
	wg.Wait()
	// 100 loads/s with bursts of 10: the second batch waits ~100 ms.
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("warm-up of 20 keys at 100/s took %s, want ≥ 80ms (rate limit ignored?)", took)
	}
	if got := calls.Load(); got != int64(len(keys)) {
		t.Errorf("loads: got %d, want %d (one per key across both instances)", got, len(keys))
	}
	c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeLock})
	if _, err := c.Warm(ctx, keys, loader, 1000, 10); err != nil {
		t.Fatalf("second Warm: %v", err)
	}
	if got := calls.Load(); got != int64(len(keys)) {
		t.Errorf("loads after a second warm-up: got %d, want still %d", got, len(keys))
	}
}

// TestRefreshAheadOneInstancePerPeriod: three instances run the job, the job
// marker lets one of them reload the hot keys each period, and Close stops
// it; on one Redis and on the cluster.
func TestRefreshAheadOneInstancePerPeriod(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { refreshAheadOnePerPeriod(t, be) })
	}
}

func refreshAheadOnePerPeriod(t *testing.T, be backend) {
	const period, runFor = 500 * time.Millisecond, 5250 * time.Millisecond
	prefix := newPrefix()
	keys := []string{prefix + "{h:1}", prefix + "{h:2}"}
	var calls atomic.Int64
	var mu sync.Mutex
	var runs []time.Time // when the first key was reloaded: one per run
	loader := func(key string) cache.LoadFunc {
		load := slowLoad(&calls, 0, "v")
		return func(ctx context.Context) ([]byte, error) {
			if key == keys[0] {
				mu.Lock()
				runs = append(runs, time.Now())
				mu.Unlock()
			}
			return load(ctx)
		}
	}

	caches := make([]*cache.Cache, 3)
	for i := range caches {
		caches[i] = newCache(t, be.client(t), cache.Config{Mode: cache.ModeSWR})
		caches[i].StartRefreshAhead("job-"+prefix, period, keys, loader)
	}
	time.Sleep(runFor)
	for _, c := range caches {
		c.Close()
	}
	got := calls.Load()
	mu.Lock()
	n := int64(len(runs))
	gaps := make([]time.Duration, 0, len(runs))
	for i := 1; i < len(runs); i++ {
		gaps = append(gaps, runs[i].Sub(runs[i-1]))
	}
	mu.Unlock()
	// Only one instance runs a period: the upper bound is one run per life
	// of the marker (90 % of a period), which no scheduling delay can
	// exceed, plus one; three instances would make about 30. (A run counts
	// by its first key: on a starved machine a run may still be reloading
	// the second when the next one skips it under its lock.)
	if maxRuns := int64(runFor/(period*9/10)) + 1; n > maxRuns || got > maxRuns*int64(len(keys)) {
		t.Errorf("%d runs (%d reloads of %d keys), want at most %d (one instance per period)", n, got, len(keys), maxRuns)
	}
	// Every period runs: a guard outliving the period would keep any two
	// runs at least two periods apart. A loaded machine can make ticks late
	// or drop them, not add any, so the proof asks only for two runs in a
	// row within 1.5 periods, once in ten, and a few runs at all.
	if n < 3 || slices.Min(gaps) >= period*3/2 {
		t.Errorf("%d runs in %d periods, gaps %v: want ≥ 3 runs and two in a row within %s (every period runs)",
			n, int64(runFor/period), gaps, period*3/2)
	}
	time.Sleep(2 * period)
	if after := calls.Load(); after != got {
		t.Errorf("reloads after Close: got %d more, want 0", after-got)
	}
}

// TestCloseReleasesHeldLock: shutting down in the middle of a load cancels
// it and deletes its lock at once, so other instances do not wait out the
// lock's TTL.
func TestCloseReleasesHeldLock(t *testing.T) {
	t.Parallel()
	rdb := dbtest.NewRedis(t, redisDB)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, LockTTL: 10 * time.Second, LoadTimeout: 10 * time.Second})
	key := newPrefix() + "{p:1}"
	var calls atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), key, slowLoad(&calls, 10*time.Second, "v"))
		done <- err
	}()
	if !dbtest.Eventually(2*time.Second, func() bool { return rdb.Exists(context.Background(), "lock:"+key).Val() == 1 }) {
		t.Fatal("the load never took its lock")
	}
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Fetch during Close: got nil error, want the cancelled load's error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Fetch still running 2s after Close")
	}
	if n := rdb.Exists(context.Background(), "lock:"+key).Val(); n != 0 {
		t.Errorf("lock key after Close: got %d, want 0 (released, not left to its 10s TTL)", n)
	}
}
