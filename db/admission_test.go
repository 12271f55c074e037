package db

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fixedWait is the hold time that makes the first waiter of a one-connection
// gate predict a wait of d.
func fixedWait(d time.Duration) time.Duration { return d }

// fullGate returns a gate whose every connection is taken (release to free).
func fullGate(t *testing.T, conns, reserved int) (*gate, []func()) {
	t.Helper()
	g := newGate(conns, reserved)
	var held []func()
	for range conns {
		leave, err := g.enter(WithClass(context.Background(), &Class{Priority: Critical}), fixedWait(0), entry{byDeadline: true})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, leave)
	}
	return g, held
}

// enterLater enters g in the background with ctx and hold, leaving at once
// if let in; the channel yields enter's error once it has returned.
func enterLater(ctx context.Context, g *gate, hold time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		leave, err := g.enter(ctx, hold, entry{byDeadline: true})
		if err == nil {
			leave()
		}
		done <- err
	}()
	return done
}

// TestGateRefusesWhatWouldTimeOut: a caller whose predicted wait does not
// fit its share of the remaining deadline is refused at once (no waiting);
// checkout may spend all of it, reads half, reports a quarter.
func TestGateRefusesWhatWouldTimeOut(t *testing.T) {
	cases := []struct {
		priority Priority
		wait     time.Duration
		refused  bool
	}{
		{Critical, 600 * time.Millisecond, false},
		{Normal, 600 * time.Millisecond, true},
		{Normal, 300 * time.Millisecond, false},
		{Low, 300 * time.Millisecond, true},
		{Low, 150 * time.Millisecond, false},
		{Critical, 1500 * time.Millisecond, true},
	}
	for _, tc := range cases {
		g, held := fullGate(t, 1, 0)
		ctx, cancel := context.WithTimeout(WithClass(context.Background(), &Class{Priority: tc.priority}), time.Second)
		start := time.Now()
		done := enterLater(ctx, g, fixedWait(tc.wait))
		if !tc.refused {
			time.Sleep(20 * time.Millisecond)
			held[0]() // a connection frees: the queued caller gets it
		}
		err := <-done
		// "At once" is an order, not a stopwatch: in the refused cases
		// nothing frees a connection, so a caller that queued could only
		// end at its deadline; a refusal must come while ctx is still live.
		expired := ctx.Err() != nil
		cancel()
		var refused *RefusedError
		if got := errors.As(err, &refused); got != tc.refused {
			t.Errorf("priority %d, predicted wait %s of 1s left: refused %v (%v), want %v", tc.priority, tc.wait, got, err, tc.refused)
		}
		if tc.refused && expired {
			t.Errorf("priority %d: refused after its deadline (%s), want at once", tc.priority, time.Since(start))
		}
	}
}

// TestGateServesNewestUnderSustainedOverload: a burst is served in order;
// once the queue has stayed non-empty for lifoAfter, the newest waiter is
// served first (its caller is the likeliest still to want the answer).
// Holds are long enough that nobody here is overdue (refused at hand-over:
// TestGateRefusesOverdueWaiters).
func TestGateServesNewestUnderSustainedOverload(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queuedFor time.Duration
		want      int // index of the waiter served first
	}{
		{"burst: oldest first", 0, 0},
		{"sustained: newest first", 2 * lifoAfter, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, held := fullGate(t, 1, 0)
			now := time.Now()
			g.now = func() time.Time { return now }
			served := make(chan int, 5)
			var wg sync.WaitGroup
			for i := range 5 {
				wg.Go(func() {
					leave, err := g.enter(context.Background(), 2*lifoAfter, entry{byDeadline: true})
					if err != nil {
						t.Error(err)
						return
					}
					served <- i
					leave()
				})
				for g.queued() != i+1 { // queue them in a known order
					time.Sleep(time.Millisecond)
				}
			}
			now = now.Add(tc.queuedFor)
			held[0]()
			if first := <-served; first != tc.want {
				t.Errorf("first served: waiter %d, want %d", first, tc.want)
			}
			wg.Wait()
		})
	}
}

// TestGateKeepsConnectionsForCheckout: the reserve is work-conserving.
// While no checkout waits, reads use every connection, the reserved one
// too; a checkout that arrives with all of them busy goes to the front and
// gets the first connection handed back, before every read queued earlier.
// "First" is an order, not a stopwatch: one release, and who got it.
func TestGateKeepsConnectionsForCheckout(t *testing.T) {
	g := newGate(3, 1)
	now := time.Now()
	g.now = func() time.Time { return now } // no standing queue, no LIFO
	read := WithClass(context.Background(), &Class{Priority: Normal})
	// A deadline, so a read kept off the reserve fails instead of hanging.
	first, cancel := context.WithTimeout(read, time.Second)
	defer cancel()
	var held []func()
	for i := range 3 {
		leave, err := g.enter(first, fixedWait(0), entry{byDeadline: true})
		if err != nil {
			t.Fatalf("read %d of 3 with no checkout waiting: %v, want a connection (the reserve too)", i+1, err)
		}
		held = append(held, leave)
	}
	served := make(chan string, 4)
	var wg sync.WaitGroup
	queue := func(name string, ctx context.Context) {
		want := g.queued() + 1
		wg.Go(func() {
			leave, err := g.enter(ctx, fixedWait(0), entry{byDeadline: true})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			served <- name
			leave()
		})
		for g.queued() != want { // queue them in a known order
			time.Sleep(time.Millisecond)
		}
	}
	queue("read 1", read)
	queue("read 2", read)
	queue("read 3", read)
	queue("checkout", WithClass(context.Background(), &Class{Priority: Critical}))
	held[0]() // one query ends: one connection is handed back
	if first := <-served; first != "checkout" {
		t.Errorf("first served after one release: %s, want the checkout (it arrived last, with every connection busy)", first)
	}
	for _, leave := range held[1:] {
		leave()
	}
	wg.Wait()
}

// TestGateStandingQueueIsShort: once the queue has not drained for
// lifoAfter, a read may wait only a couple of connection holds however long
// its deadline: it is refused quickly (503 + Retry-After) instead of adding
// to a queue that only adds delay. Checkout keeps its whole share.
func TestGateStandingQueueIsShort(t *testing.T) {
	for _, tc := range []struct {
		priority Priority
		refused  bool
	}{{Normal, true}, {Critical, false}} {
		g, held := fullGate(t, 1, 0)
		now := time.Now()
		g.now = func() time.Time { return now }
		first := enterLater(context.Background(), g, 0) // a waiter that keeps the queue standing
		for g.queued() != 1 {
			time.Sleep(time.Millisecond)
		}
		now = now.Add(2 * lifoAfter)
		ctx, cancel := context.WithTimeout(WithClass(context.Background(), &Class{Priority: tc.priority}), 2*time.Second)
		start := time.Now()
		done := enterLater(ctx, g, 10*time.Millisecond)
		var err error
		expired := false
		if tc.refused {
			err = <-done
			// Nothing frees a connection until after the answer: a read
			// that waited could only end at its 2 s deadline, so a
			// refusal must come while ctx is still live.
			expired = ctx.Err() != nil
			held[0]()
		} else {
			time.Sleep(100 * time.Millisecond)
			held[0]()
			err = <-done
		}
		<-first
		cancel()
		var refused *RefusedError
		if got := errors.As(err, &refused); got != tc.refused {
			t.Errorf("priority %d in a standing queue: refused %v (%v), want %v", tc.priority, got, err, tc.refused)
		}
		if tc.refused && expired {
			t.Errorf("refused after %s, at its deadline: want within a couple of holds, not the 2 s deadline", time.Since(start))
		}
	}
}

// TestClassMarks: a request's priority and queue cap ride in one context
// value, the class's own; an unmarked request is normal and uncapped.
func TestClassMarks(t *testing.T) {
	bg := context.Background()
	cases := []struct {
		name     string
		ctx      context.Context
		want     Priority
		wantMax  int64
		wantCaps bool
	}{
		{"unmarked: normal, no cap", bg, Normal, 0, false},
		{"priority only", WithClass(bg, &Class{Priority: Critical}), Critical, 0, false},
		{"a cap of 0", WithClass(bg, &Class{Capped: true}), Normal, 0, true},
		{"priority and cap", WithClass(bg, &Class{Priority: Low, MaxWaiting: 3, Capped: true}), Low, 3, true},
		{"the innermost class wins", WithClass(WithClass(bg, &Class{Priority: Low, MaxWaiting: 3, Capped: true}), &Class{Priority: Critical}), Critical, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, capped := maxWaiting(tc.ctx)
			if p := priorityOf(tc.ctx); p != tc.want || n != tc.wantMax || capped != tc.wantCaps {
				t.Errorf("got priority %d, cap %d (%v); want %d, %d (%v)", p, n, capped, tc.want, tc.wantMax, tc.wantCaps)
			}
		})
	}
}
