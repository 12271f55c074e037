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

// TestLockExpiresDuringSlowLoad is the lab's lock-ttl experiment: a short
// lock over a query three times as long (the lab's 100 ms over 300 ms,
// scaled ×5 here so a loaded machine's stalls are small beside them). Two
// instances ask for one cold key, the second 50 ms into the first's load.
// The loader answers "v1", "v2"… in call order.
//
// Not parallel with the other tests: with a 100 ms lock the watchdog had to
// run every 50 ms, and beside the 1000-goroutine stampedes under -race it
// sometimes did not (the lock was lost, v2 stored). Sequential tests run
// before the parallel ones start, so this one runs on a quiet process.
func TestLockExpiresDuringSlowLoad(t *testing.T) {
	tests := []lockExpiryCase{
		{
			// Each holder outlives its own lock, so each fenced write is
			// refused: the first does not overwrite, the second has nothing
			// to be fenced against but lost its lock too.
			name: "no watchdog, both loads outlive their lock", watchdog: cache.WatchdogOff,
			lockTTL: 500 * time.Millisecond, loadTimes: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond},
			wantLoads: 2, wantA: "v1", wantB: "v2", wantStored: "", wantLostA: 1, wantLostB: 1,
		},
		{
			// The second load fits in its lock and is stored; the first
			// holder's late write (at 1.5 s) must not replace it. 100 ms
			// in a 500 ms lock leaves 400 ms for the fenced write (a 20 ms
			// load in a 100 ms lock left 80 ms, which a loaded machine
			// could miss).
			name: "no watchdog, second load fits its lock", watchdog: cache.WatchdogOff,
			lockTTL: 500 * time.Millisecond, loadTimes: []time.Duration{1500 * time.Millisecond, 100 * time.Millisecond},
			wantLoads: 2, wantA: "v1", wantB: "v2", wantStored: "v2", wantLostA: 1, wantLostB: 0,
		},
		{
			// The same 1:3 lock-to-load ratio, scaled ×5: at 100 ms the
			// watchdog has 50 ms to extend, and Redis on a loaded 2-CPU CI
			// machine stalled longer than that (both holders lost their
			// lock). 250 ms of slack keeps the test about the watchdog.
			name: "watchdog keeps the lock", watchdog: cache.WatchdogOn,
			lockTTL: 500 * time.Millisecond, loadTimes: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond},
			wantLoads: 1, wantA: "v1", wantB: "v1", wantStored: "v1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runLockExpiry(t, tc)
		})
	}
}

// lockExpiryCase is one row of TestLockExpiresDuringSlowLoad.
type lockExpiryCase struct {
	name       string
	watchdog   cache.WatchdogMode
	lockTTL    time.Duration
	loadTimes  []time.Duration // per call, in order
	wantLoads  int64
	wantA      string // value the first instance's caller gets
	wantB      string // value the second instance's caller gets
	wantStored string // value left in Redis; "" for none
	wantLostA  int64  // Stats().LockLost of the first instance
	wantLostB  int64
}

// runLockExpiry has two instances fetch one cold key, the second 50 ms into
// the first's load, and checks what each got and what Redis holds.
func runLockExpiry(t *testing.T, tc lockExpiryCase) {
	ctx := context.Background()
	key := newPrefix() + "{p:1}"
	var calls atomic.Int64
	firstLoad := make(chan struct{})
	load := func(ctx context.Context) ([]byte, error) {
		n := calls.Add(1)
		if n == 1 {
			close(firstLoad)
		}
		d := tc.loadTimes[min(int(n), len(tc.loadTimes))-1]
		if _, err := slowLoad(new(atomic.Int64), d, "")(ctx); err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "v%d", n), nil
	}
	cfg := cache.Config{
		Mode: cache.ModeLock, LockTTL: tc.lockTTL, Watchdog: tc.watchdog,
		// The default LoadTimeout is LockTTL, which would cancel the
		// query when its lock expires: the lab is about a query that
		// outlives its lock, so let it run.
		LoadTimeout: 5 * time.Second,
	}
	a := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	b := newCache(t, dbtest.NewRedis(t, redisDB), cfg)

	var resA, resB cache.Result
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { resA, errA = a.Fetch(ctx, key, load) })
	// B starts 50 ms into A's load (not 50 ms after A's goroutine:
	// on a starved machine A may not have taken the lock by then).
	<-firstLoad
	time.Sleep(50 * time.Millisecond)
	wg.Go(func() { resB, errB = b.Fetch(ctx, key, load) })
	wg.Wait()

	if errA != nil || errB != nil {
		t.Fatalf("got errors A=%v B=%v, want none", errA, errB)
	}
	if got := calls.Load(); got != tc.wantLoads {
		t.Errorf("got %d loads, want %d", got, tc.wantLoads)
	}
	if string(resA.Value) != tc.wantA || string(resB.Value) != tc.wantB {
		t.Errorf("got A=%q B=%q, want A=%q B=%q", resA.Value, resB.Value, tc.wantA, tc.wantB)
	}
	if got := a.Stats().LockLost; got != tc.wantLostA {
		t.Errorf("first instance: got LockLost %d, want %d", got, tc.wantLostA)
	}
	if got := b.Stats().LockLost; got != tc.wantLostB {
		t.Errorf("second instance: got LockLost %d, want %d", got, tc.wantLostB)
	}
	if tc.watchdog == cache.WatchdogOn {
		if got := a.Stats().Extensions; got < 1 {
			t.Errorf("first instance: got %d lock extensions, want >= 1", got)
		}
	}
	checkStoredValue(t, ctx, key, tc.wantStored)
}

// checkStoredValue reads key through a third instance: want, or nothing
// when want is "".
func checkStoredValue(t *testing.T, ctx context.Context, key, want string) {
	t.Helper()
	var probeCalls atomic.Int64
	probe := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeLock})
	res, err := probe.Fetch(ctx, key, slowLoad(&probeCalls, 0, "probe"))
	if err != nil {
		t.Fatalf("probe fetch: got %v, want nil", err)
	}
	switch {
	case want == "" && (probeCalls.Load() != 1 || res.Status != cache.Miss):
		t.Errorf("stored value: got %q (status %s), want none", res.Value, res.Status)
	case want != "" && (string(res.Value) != want || res.Status != cache.Hit):
		t.Errorf("stored value: got %q (status %s), want %q (HIT)", res.Value, res.Status, want)
	}
}
