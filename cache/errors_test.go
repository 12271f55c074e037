package cache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/cache/internal/redislock"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

var errBoom = errors.New("database is on fire")

// TestLoadErrorSharedThenRetried: a failed load fails every waiter once,
// caches nothing, and the next call loads again.
func TestLoadErrorSharedThenRetried(t *testing.T) {
	t.Parallel()
	const waiters = 50
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock})
	key := newPrefix() + "{p:1}"

	// The load fails only once every waiter has called Fetch and had time
	// to join it: on a starved machine a fixed sleep let stragglers arrive
	// after the failure and (rightly) load again.
	var calls, entered atomic.Int64
	allIn := make(chan struct{})
	failing := func(context.Context) ([]byte, error) {
		calls.Add(1)
		<-allIn
		time.Sleep(500 * time.Millisecond)
		return nil, errBoom
	}
	var shared, other, values atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			<-start
			if entered.Add(1) == waiters {
				close(allIn)
			}
			_, err := c.Fetch(ctx, key, failing)
			switch {
			case errors.Is(err, errBoom):
				shared.Add(1)
			case err != nil:
				other.Add(1)
			default:
				values.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if shared.Load() != waiters || other.Load() != 0 || values.Load() != 0 {
		t.Errorf("got %d loader errors, %d other errors, %d values; want %d, 0, 0",
			shared.Load(), other.Load(), values.Load(), waiters)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("got %d loads, want 1", got)
	}

	// Nothing cached and the lock released, so the next call loads (a lock
	// left behind would make it wait LockWait and time out instead).
	if n := rdb.Exists(ctx, key, "lock:"+key).Val(); n != 0 {
		t.Errorf("after the failed load: got %d of {value, lock} keys, want 0", n)
	}
	res, err := c.Fetch(ctx, key, slowLoad(&calls, 0, "value"))
	if err != nil || string(res.Value) != "value" || res.Status != cache.Miss {
		t.Fatalf("retry: got %q, %s, %v, want %q, MISS, nil", res.Value, res.Status, err, "value")
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("after retry: got %d loads, want 2", got)
	}
}

// TestCancelledCallerDoesNotCancelLoad: the caller that started the shared
// load gives up; it returns its ctx error without waiting for the load (which
// is held back until it has returned), the load runs on, and the other
// callers get the value.
func TestCancelledCallerDoesNotCancelLoad(t *testing.T) {
	t.Parallel()
	const others = 10
	c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeLock})
	key := newPrefix() + "{p:1}"

	var calls, cancelled atomic.Int64
	started, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	load := func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		once.Do(func() { close(started) })
		<-gate
		if ctx.Err() != nil {
			cancelled.Add(1)
			return nil, ctx.Err()
		}
		return []byte("value"), nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Fetch(ctx, key, load)
		firstErr <- err
	}()
	<-started

	var wg sync.WaitGroup
	results := make([]string, others)
	errs := make([]error, others)
	for i := range others {
		wg.Go(func() {
			res, err := c.Fetch(context.Background(), key, load)
			results[i], errs[i] = string(res.Value), err
		})
	}
	time.Sleep(20 * time.Millisecond) // let the others join the flight
	cancel()
	select {
	case err := <-firstErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled caller: got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("cancelled caller: still waiting 5s after cancel, want it to return without the load")
	}
	close(gate)

	wg.Wait()
	for i := range others {
		if errs[i] != nil || results[i] != "value" {
			t.Errorf("caller %d: got %q, %v, want %q, nil", i, results[i], errs[i], "value")
		}
	}
	if calls.Load() != 1 || cancelled.Load() != 0 {
		t.Errorf("got %d loads of which %d saw a cancelled ctx, want 1 and 0", calls.Load(), cancelled.Load())
	}
}

// TestCorruptValueIsAMiss: a foreign or damaged value under the key is
// loaded over, in every mode, never returned as an error.
func TestCorruptValueIsAMiss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	header := func(flag byte) string { return "sg\x02" + string(flag) + string(make([]byte, 32)) }
	tests := []struct {
		name, value string
		mode        cache.Mode
	}{
		{"naive, plain string", "hello", cache.ModeNaive},
		{"singleflight, plain string", "hello", cache.ModeSingleflight},
		{"lock, plain string", "hello", cache.ModeLock},
		{"swr, plain string", "hello", cache.ModeSWR},
		{"xfetch, plain string", "hello", cache.ModeXFetch},
		{"lock, empty", "", cache.ModeLock},
		{"lock, truncated header", "sg\x02\x00", cache.ModeLock},
		{"lock, previous format", "sg\x01\x00" + string(make([]byte, 16)) + "x", cache.ModeLock},
		{"lock, unknown flag", header(4) + "x", cache.ModeLock},
		{"lock, static and absent at once", header(3), cache.ModeLock},
		{"lock, absent with payload", header(1) + "x", cache.ModeLock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCache(t, rdb, cache.Config{Mode: tc.mode})
			key := newPrefix() + "{p:1}"
			if err := rdb.Set(ctx, key, tc.value, time.Minute).Err(); err != nil {
				t.Fatalf("plant corrupt value: %v", err)
			}
			var calls atomic.Int64
			res, err := c.Fetch(ctx, key, slowLoad(&calls, 0, "fresh"))
			if err != nil || string(res.Value) != "fresh" || res.Status != cache.Miss {
				t.Fatalf("first fetch: got %q, %s, %v, want %q, MISS, nil", res.Value, res.Status, err, "fresh")
			}
			if raw := rdb.Get(ctx, key).Val(); raw == tc.value {
				t.Errorf("Redis still holds the corrupt value %q, want it replaced", raw)
			}
			res, err = c.Fetch(ctx, key, slowLoad(&calls, 0, "again"))
			if err != nil || string(res.Value) != "fresh" || res.Status != cache.Hit {
				t.Errorf("second fetch: got %q, %s, %v, want %q, HIT, nil", res.Value, res.Status, err, "fresh")
			}
			if n, corrupt := calls.Load(), c.Stats().Corrupt; n != 1 || corrupt < 1 {
				t.Errorf("got %d loads, Stats().Corrupt %d, want 1, >= 1", n, corrupt)
			}
		})
	}
}

// TestAbsentIsCachedNegatively: ErrAbsent from the loader is an answer, and
// the next request for it is a hit that costs no load.
func TestAbsentIsCachedNegatively(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeLock})
	key := newPrefix() + "{p:404}"
	var calls atomic.Int64
	absent := func(context.Context) ([]byte, error) { calls.Add(1); return nil, cache.ErrAbsent }

	res, err := c.Fetch(ctx, key, absent)
	if err != nil || !res.Absent || res.Value != nil || res.Status != cache.Miss {
		t.Fatalf("first fetch: got absent=%v value=%q %s %v, want absent=true value=nil MISS nil", res.Absent, res.Value, res.Status, err)
	}
	res, err = c.Fetch(ctx, key, absent)
	if err != nil || !res.Absent || res.Status != cache.Hit {
		t.Errorf("second fetch: got absent=%v %s %v, want absent=true HIT nil", res.Absent, res.Status, err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("got %d loads, want 1", got)
	}
}

// TestLockWaitTimeout: while another instance holds the lock and never
// stores a value, a waiter gives up after LockWait with ErrLockTimeout.
func TestLockWaitTimeout(t *testing.T) {
	t.Parallel()
	// The slack stays below the default LockWait (2s), so a waiter that
	// ignored the configured one would fail.
	const wait, slack = 200 * time.Millisecond, 500 * time.Millisecond
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, LockWait: wait})
	key := newPrefix() + "{p:1}"
	held, err := redislock.Obtain(ctx, rdb, "lock:"+key, 10*time.Second)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}

	var calls atomic.Int64
	t0 := time.Now()
	_, err = c.Fetch(ctx, key, slowLoad(&calls, 0, "value"))
	took := time.Since(t0)
	if !errors.Is(err, cache.ErrLockTimeout) {
		t.Errorf("got %v, want ErrLockTimeout", err)
	}
	if took < wait || took > wait+slack {
		t.Errorf("gave up after %s, want in [%s, %s]", took, wait, wait+slack)
	}
	if calls.Load() != 0 {
		t.Errorf("got %d loads, want 0 (the lock is held elsewhere)", calls.Load())
	}
	if err := held.Release(ctx); err != nil {
		t.Errorf("Release of the held lock: got %v, want nil (waiter must not touch it)", err)
	}
}

// TestFailFastWaiter: with WaiterFail a request that finds another instance
// loading answers ErrLockTimeout at once instead of polling for LockWait,
// hinting a retry within a second: not the 10 s the holder's lock has left,
// since loads end long before their locks expire.
func TestFailFastWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, LockWait: 5 * time.Second, Waiter: cache.WaiterFail})
	key := newPrefix() + "{p:1}"
	held, err := redislock.Obtain(ctx, rdb, "lock:"+key, 10*time.Second)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	t.Cleanup(func() { _ = held.Release(context.Background()) })
	var calls atomic.Int64
	start := time.Now()
	_, err = c.Fetch(ctx, key, slowLoad(&calls, 0, "v"))
	if !errors.Is(err, cache.ErrLockTimeout) {
		t.Fatalf("got %v, want ErrLockTimeout", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("fail-fast waiter took %s, want far less than LockWait (5s)", took)
	}
	var hint interface{ RetryHint() time.Duration }
	if !errors.As(err, &hint) || hint.RetryHint() <= 0 || hint.RetryHint() > time.Second {
		t.Errorf("retry hint: got %v, want within a second", err)
	}
	if calls.Load() != 0 {
		t.Errorf("loads: got %d, want 0", calls.Load())
	}
}
