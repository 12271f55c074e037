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

// The classic measurement: 5 instances × 200 concurrent requests
// for one cold key, with a 300 ms loader.
const (
	instances   = 5
	perInstance = 200
	stampedeLen = 300 * time.Millisecond
)

type stampedeResult struct {
	ok       int64    // Fetches that returned the loaded value
	errs     []error  // the others
	loads    int64    // loader calls, across all instances
	stats    int64    // Stats().Loads summed over the instances
	lockKeys []string // lock keys left in Redis afterwards
	why      string   // counters that tell a second load's path apart
}

// runStampede starts instances caches in mode, each on its own client (its
// own pool and its own single-flight, as separate processes would have), and
// releases perInstance concurrent Fetches of one cold key on each at once.
func runStampede(t *testing.T, mode cache.Mode) stampedeResult {
	t.Helper()
	prefix := newPrefix()
	key := prefix + "{product:1}"
	var calls atomic.Int64
	load := slowLoad(&calls, stampedeLen, "value")

	caches := make([]*cache.Cache, instances)
	admin := dbtest.NewRedis(t, redisDB)
	for i := range caches {
		// LockWait and LockTTL well above their defaults: on a starved CI
		// machine the holder's 300 ms load can take seconds to be stored
		// (a CI run saw the lock expire, watchdog and all, after 5 s), and
		// a waiter giving up or a lock expiring then proves nothing about
		// the stampede. The load count is what this test is about; lock
		// expiry has tests of its own.
		caches[i] = newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{
			Mode: mode, L1TTL: 0, LockWait: 20 * time.Second, LockTTL: 30 * time.Second})
	}

	ok, errs := fetchAtOnce(caches, key, load)
	r := stampedeResult{ok: ok, errs: errs, loads: calls.Load()}
	var acquired, lost, timeouts, corrupt, replays int64
	for _, c := range caches {
		st := c.Stats()
		r.stats += st.Loads
		acquired, lost, timeouts = acquired+st.LockAcquired, lost+st.LockLost, timeouts+st.LockTimeouts
		corrupt, replays = corrupt+st.Corrupt+st.OutOfBounds, replays+st.Replays
	}
	// A load beyond the lock holder's is either a second holder (the
	// first one's store failed or was refused) or a read that found Redis
	// unusable (an I/O timeout on a starved machine: the outage path loads
	// directly, by design).
	r.why = fmt.Sprintf("locks acquired %d, lost %d, lock timeouts %d, entries refused %d corrupt or out of bounds + %d replays",
		acquired, lost, timeouts, corrupt, replays)
	r.lockKeys = scanKeys(t, admin, "lock:"+prefix+"*")
	return r
}

// fetchAtOnce releases perInstance concurrent Fetches of key on each of
// caches at once, and returns how many got the loaded "value" and the errors
// of the others.
func fetchAtOnce(caches []*cache.Cache, key string, load cache.LoadFunc) (int64, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := make(chan struct{})
	var (
		wg   sync.WaitGroup
		ok   atomic.Int64
		mu   sync.Mutex
		errs []error
	)
	for _, c := range caches {
		for range perInstance {
			wg.Go(func() {
				<-start
				res, err := c.Fetch(ctx, key, load)
				if err == nil && string(res.Value) != "value" {
					err = fmt.Errorf("got value %q, want %q", res.Value, "value")
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				ok.Add(1)
			})
		}
	}
	close(start)
	wg.Wait()
	return ok.Load(), errs
}

func (r stampedeResult) checkAllServed(t *testing.T) {
	t.Helper()
	if want := int64(instances * perInstance); r.ok != want {
		t.Errorf("got %d successful fetches, want %d", r.ok, want)
	}
	for i, err := range r.errs {
		if i == 3 {
			t.Errorf("... and %d more errors", len(r.errs)-i)
			break
		}
		t.Errorf("fetch failed: %v", err)
	}
	if r.stats != r.loads {
		t.Errorf("got Stats().Loads summed %d, want %d (the loader's own count)", r.stats, r.loads)
	}
}

// TestStampedeOneLoadAcrossInstances: with the lock (alone or under swr) a
// cold key costs the database one query, however many instances and
// requests ask for it at once, and the lock is gone afterwards.
func TestStampedeOneLoadAcrossInstances(t *testing.T) {
	t.Parallel()
	// The modes run one after the other: 1000 goroutines each are load
	// enough without doubling it.
	for _, mode := range []cache.Mode{cache.ModeLock, cache.ModeSWR} {
		t.Run(string(mode), func(t *testing.T) {
			r := runStampede(t, mode)
			r.checkAllServed(t)
			if r.loads != 1 {
				t.Errorf("got %d loads, want 1 (%s)", r.loads, r.why)
			}
			if len(r.lockKeys) != 0 {
				t.Errorf("got lock keys %q left in Redis, want none", r.lockKeys)
			}
		})
	}
}

// TestStampedeNaiveVersusLock is the contrast: without protection the same
// stampede sends nearly every request to the database.
func TestStampedeNaiveVersusLock(t *testing.T) {
	t.Parallel()
	naive := runStampede(t, cache.ModeNaive)
	naive.checkAllServed(t)
	locked := runStampede(t, cache.ModeLock)
	locked.checkAllServed(t)

	// Every request that misses before the first load is stored loads too,
	// so naive loads up to 1000 times (fewer on a starved machine, where
	// late requests find the value). More than one per instance rules out
	// any dedup at all: single-flight alone would give at most 5.
	if naive.loads <= instances {
		t.Errorf("naive: got %d loads, want more than %d (one per request, up to %d)", naive.loads, instances, instances*perInstance)
	}
	if locked.loads != 1 {
		t.Errorf("lock: got %d loads, want 1", locked.loads)
	}
	if naive.loads <= locked.loads {
		t.Errorf("got naive loads %d <= lock loads %d, want naive far above lock", naive.loads, locked.loads)
	}
	t.Logf("same stampede: naive %d loads, lock %d", naive.loads, locked.loads)
}
