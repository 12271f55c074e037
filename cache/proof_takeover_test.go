package cache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestWaitRestartsWhenLockChangesHands: a waiter that sees the lock pass to
// another holder (the first died, another instance took over) owes the new
// holder's load a whole LockWait, counted from the change. Here the first
// holder's lock is replaced by a second holder's 2 s into a 4 s wait, and
// the second holder's value lands 5 s in: 1 s past the waiter's first
// deadline, about 1 s within the restarted one (6 s in, or later if the
// waiter sees the change late). The waiter must answer it, not
// ErrLockTimeout. The margins are whole seconds on either side, and the
// waiter has 2 s (ten capped polls) to see the change.
func TestWaitRestartsWhenLockChangesHands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lockWait = 4 * time.Second
	key := newPrefix() + "{takeover:1}"
	lk := "lock:" + key
	admin := dbtest.NewRedis(t, redisDB)
	if err := admin.Set(ctx, lk, "first-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Del(context.Background(), key, lk) })

	rdb := dbtest.NewRedis(t, redisDB)
	polls := &pollLog{lock: lk}
	rdb.AddHook(polls)
	cfg := cache.Config{Mode: cache.ModeLock, LockWait: lockWait, FillChannel: "fill:" + dbtest.Unique()}
	w := newCache(t, rdb, cfg)
	writer := newCache(t, dbtest.NewRedis(t, redisDB), cfg)

	type answer struct {
		value string
		err   error
	}
	done := make(chan answer, 1)
	var loads atomic.Int64
	go func() {
		r, err := w.Fetch(ctx, key, slowLoad(&loads, 0, "waiter-loaded"))
		done <- answer{string(r.Value), err}
	}()
	if !dbtest.Eventually(5*time.Second, func() bool { return len(polls.times()) > 0 }) {
		t.Fatal("the waiter never tried the lock")
	}
	first := polls.times()[0] // its wait started here

	// 2 s in: the lock changes hands.
	time.Sleep(time.Until(first.Add(lockWait / 2)))
	if err := admin.Set(ctx, lk, "second-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	if !dbtest.Eventually(5*time.Second, func() bool { p := polls.times(); return p[len(p)-1].After(changed) }) {
		t.Fatal("the waiter did not poll after the lock changed hands")
	}
	seen := polls.times()[len(polls.times())-1]
	if seen.After(first.Add(lockWait)) {
		t.Fatalf("the waiter first saw the new holder %s into its wait, past its %s deadline: it polled nothing for 2 s", seen.Sub(first), lockWait)
	}
	// 1 s past the first deadline, 1 s before the restarted one (at the
	// earliest; later if the waiter saw the change late): the second
	// holder's value lands (Set also frees its lock).
	time.Sleep(time.Until(first.Add(lockWait + time.Second)))
	select {
	case a := <-done:
		t.Fatalf("the waiter answered %q, %v %s into its wait, before the new holder's value: its wait did not restart when the lock changed hands",
			a.value, a.err, time.Since(first))
	default:
	}
	if err := writer.Set(ctx, key, []byte("second-holder's value")); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.err != nil || a.value != "second-holder's value" {
			t.Errorf("waiter: %q, %v; want the second holder's value", a.value, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not answer within 5 s of the value landing")
	}
	if loads.Load() != 0 {
		t.Errorf("the waiter loaded %d times, want 0", loads.Load())
	}
}

// TestTakeoverLoadDeadlineStartsAtTheLock: a waiter that takes over a dead
// holder's lock late in its wait still gets a whole load, because the
// load's deadline is counted from the lock, not from the start of the wait.
// The dead holder's lock is set to expire 2 s into a 4 s wait (LockWait =
// LoadTimeout = 4 s), and the takeover's load takes 2.5 s: it ends at least
// 4.5 s after the wait began, past any deadline counted from the wait
// (red), and about 1.5 s before the one counted from the lock (green).
// Neither margin is a wall-clock race: the lock's expiry is in Redis and
// the load's length is the loader's own; the waiter only has to poll once
// within the 2 s left of its wait after the lock expires.
func TestTakeoverLoadDeadlineStartsAtTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		lockWait = 4 * time.Second
		expireAt = 2 * time.Second // into the wait: the holder died late
		loadTime = 2500 * time.Millisecond
	)
	key := newPrefix() + "{takeover:late}"
	lk := "lock:" + key
	admin := dbtest.NewRedis(t, redisDB)
	if err := admin.Set(ctx, lk, "dead-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Del(context.Background(), key, lk) })

	rdb := dbtest.NewRedis(t, redisDB)
	polls := &pollLog{lock: lk}
	rdb.AddHook(polls)
	w := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, LockWait: lockWait, LoadTimeout: lockWait,
		FillChannel: "fill:" + dbtest.Unique()})

	type answer struct {
		value string
		err   error
	}
	done := make(chan answer, 1)
	var loads atomic.Int64
	var loadErr atomic.Value
	load := func(ctx context.Context) ([]byte, error) {
		v, err := slowLoad(&loads, loadTime, "taken over")(ctx)
		if err != nil {
			loadErr.Store(err)
		}
		return v, err
	}
	go func() {
		r, err := w.Fetch(ctx, key, load)
		done <- answer{string(r.Value), err}
	}()
	if !dbtest.Eventually(5*time.Second, func() bool { return len(polls.times()) > 0 }) {
		t.Fatal("the waiter never tried the lock")
	}
	// The wait (and any deadline counted from it) began before its first
	// attempt: make the dead holder's lock expire expireAt after that.
	first := polls.times()[0]
	if err := admin.PExpire(ctx, lk, time.Until(first.Add(expireAt))).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.err != nil || a.value != "taken over" {
			t.Errorf("waiter: %q, %v after %s (load error %v); want the value of its own takeover: "+
				"a deadline counted from the wait (%s) cut a load that began %s into it",
				a.value, a.err, time.Since(first), loadErr.Load(), lockWait, expireAt)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not answer within 30 s")
	}
	if got := loads.Load(); got != 1 {
		t.Errorf("loads: %d, want 1 (the takeover)", got)
	}
}
