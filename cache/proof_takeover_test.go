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
// holder's lock is replaced by a second holder's 1 s into a 2 s wait, and
// the second holder's value lands 2.3 s in: past the waiter's first
// deadline, well within the restarted one. The waiter must answer it, not
// ErrLockTimeout.
func TestWaitRestartsWhenLockChangesHands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lockWait = 2 * time.Second
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

	// 1 s in: the lock changes hands.
	time.Sleep(time.Until(first.Add(time.Second)))
	if err := admin.Set(ctx, lk, "second-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	if !dbtest.Eventually(5*time.Second, func() bool { p := polls.times(); return p[len(p)-1].After(changed) }) {
		t.Fatal("the waiter did not poll after the lock changed hands")
	}
	if seen := polls.times()[len(polls.times())-1]; seen.After(first.Add(lockWait)) {
		t.Fatalf("the waiter first saw the new holder %s into its wait, past its %s deadline: the machine is too slow for this test", seen.Sub(first), lockWait)
	}
	// 2.3 s in: the second holder's value lands (Set also frees its lock).
	time.Sleep(time.Until(first.Add(lockWait + 300*time.Millisecond)))
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
