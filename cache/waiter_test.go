package cache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestWaiterPolicies: a key's lock is held by a holder that never finishes
// (it died, and its lock outlives every wait). What two instances' 50
// waiters answer depends on Waiter: wait and fail give up with
// ErrLockTimeout; load answers every one at the cost of at most one query
// per instance. A timeout's retry hint is the holder's lock's remaining TTL
// after a whole wait, at most a second for a fail-fast waiter (the client
// chose to come back soon; a live holder's load ends long before its lock).
func TestWaiterPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := dbtest.NewRedis(t, redisDB)
	cases := []struct {
		name      string
		waiter    cache.Waiter
		wantOK    int64
		wantLoads int64
		hintMin   time.Duration // and at most a minute
	}{
		{"wait", cache.WaiterWait, 0, 0, 30 * time.Second},
		{"fail", cache.WaiterFail, 0, 0, 0},
		{"load", cache.WaiterLoad, 50, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cache.Config{Mode: cache.ModeLock, LockWait: 300 * time.Millisecond, Waiter: tc.waiter}
			fleet := []*cache.Cache{newCache(t, dbtest.NewRedis(t, redisDB), cfg), newCache(t, dbtest.NewRedis(t, redisDB), cfg)}
			key := newPrefix() + "{p:1}"
			if err := admin.Set(ctx, "lock:"+key, "dead-holder", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			var loads, ok, timeouts atomic.Int64
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					r, err := fleet[i%2].Fetch(ctx, key, slowLoad(&loads, 50*time.Millisecond, "v"))
					switch {
					case err == nil && string(r.Value) == "v":
						ok.Add(1)
					case errors.Is(err, cache.ErrLockTimeout):
						timeouts.Add(1)
						// After a wait, the hint is when the dead holder's
						// lock expires, not a constant.
						hintMax := time.Minute
						if tc.waiter == cache.WaiterFail {
							hintMax = time.Second
						}
						var h interface{ RetryHint() time.Duration }
						if !errors.As(err, &h) || h.RetryHint() <= tc.hintMin || h.RetryHint() > hintMax {
							t.Errorf("lock timeout %v: want a retry hint in (%s, %s]", err, tc.hintMin, hintMax)
						}
					default:
						t.Errorf("fetch: %q, %v", r.Value, err)
					}
				})
			}
			wg.Wait()
			if ok.Load() != tc.wantOK || ok.Load()+timeouts.Load() != 50 {
				t.Errorf("%d answered, %d timed out; want %d answered, the rest timed out", ok.Load(), timeouts.Load(), tc.wantOK)
			}
			if loads.Load() != tc.wantLoads {
				t.Errorf("%d loads, want %d (one per instance at most)", loads.Load(), tc.wantLoads)
			}
		})
	}
}
