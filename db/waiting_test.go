package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestWaitingLeavesOutDials: a caller whose connection is being dialled
// holds one of the pool's places and waits for the network, not for
// another caller's query, so Waiting (the gauge SHED_MAX_WAITING and the
// shedder read) does not count it; a caller behind a held connection is
// counted. Counting both made the overload lab's queue peak at 5 with a
// cap of 4: the gate had admitted the pool's two places and four waiters,
// and one of the two was still dialling.
func TestWaitingLeavesOutDials(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedURL(t, "dial")
	pool := openPoolAt(t, db.Config{URL: dsn, MaxConns: 2, AcquireTimeout: 10 * time.Second})

	held, err := pool.Acquire(t.Context()) // Open's one connection
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	proxy.SetDelay(300 * time.Millisecond) // a dial is several round trips

	acquire := func(wg *sync.WaitGroup, errs chan<- error) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, err := pool.Acquire(ctx)
			if err == nil {
				conn.Release()
			}
			errs <- err
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	acquire(&wg, errs) // finds no idle connection and room for one: dials
	if !dbtest.Eventually(5*time.Second, func() bool { return pool.Stat().ConstructingConns() == 1 }) {
		t.Fatalf("no connection being dialled: %d constructing", pool.Stat().ConstructingConns())
	}
	if got := pool.Waiting(); got != 0 {
		t.Errorf("Waiting during a dial, nobody behind a held connection: got %d, want 0", got)
	}
	acquire(&wg, errs) // the pool is full: waits for a release
	if !dbtest.Eventually(5*time.Second, func() bool { return pool.Waiting() == 1 }) {
		t.Errorf("Waiting with one caller behind a held connection and one dialling: got %d, want 1", pool.Waiting())
	}
	time.Sleep(50 * time.Millisecond)
	if got := pool.Waiting(); got != 1 {
		t.Errorf("Waiting with one caller behind a held connection and one dialling, a moment later: got %d, want 1", got)
	}
	if pool.Stat().ConstructingConns() != 1 {
		t.Errorf("the dial ended before the check: %d constructing (the link's delay is too short)", pool.Stat().ConstructingConns())
	}
	held.Release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("acquire: %v", err)
		}
	}
	if got := pool.Waiting(); got != 0 {
		t.Errorf("Waiting once everyone was served: got %d, want 0", got)
	}
}
