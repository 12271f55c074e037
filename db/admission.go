package db

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// lifoAfter is how long the queue must stay non-empty before the gate
// serves the newest waiter first: a queue that never drains means the
// oldest waiters' callers are the likeliest to have given up already (Fail
// at Scale's adaptive LIFO), while a short burst is still served in order.
const lifoAfter = 100 * time.Millisecond

// gate admits callers to the pool's connections through a queue of its own,
// in front of pgxpool's: it refuses at the door a caller whose predicted
// wait does not fit its deadline, keeps connections for checkout, and
// chooses whom to serve next (critical first; newest first under
// sustained overload).
type gate struct {
	mu       sync.Mutex
	conns    int // connections behind the gate
	free     int // connections the gate may still hand out
	reserved int // of those, kept for Critical callers
	queue    []*waiter
	// claims are places taken by callers still on their way (claim.go):
	// counted as demand, so a burst cannot all see the same free slot.
	claims    int
	lastEmpty time.Time // when the queue was last empty
	now       func() time.Time
}

type waiter struct {
	priority Priority
	ready    chan struct{} // closed when a connection is handed over
	// refused, set before ready is closed, means no connection after
	// all: the waiter outstayed the standing-queue budget (overdue).
	refused *RefusedError
	since   time.Time     // when it joined the queue
	hold    time.Duration // the hold time it was judged with
	budget  time.Duration // its standing-queue budget; 0: never overdue
}

func newGate(conns, reserved int) *gate {
	return &gate{conns: conns, free: conns, reserved: min(reserved, conns-1), now: time.Now, lastEmpty: time.Now()}
}

// entry is how the gate judges a caller that must queue.
type entry struct {
	// byDeadline refuses a caller whose predicted wait does not fit its
	// share of its remaining deadline (Config.Admission).
	byDeadline bool
	// maxWaiting, when hasMax, is the longest queue the caller may join
	// (its Class).
	maxWaiting int64
	hasMax     bool
}

// enter waits for a connection slot. hold is the average connection hold
// time, so the queued-th waiter's predicted wait is queued × hold ÷
// connections. It returns a release func, or a *RefusedError when the wait
// would not fit the caller's share of its deadline (or, in a standing
// queue, a couple of holds), or the context error.
func (g *gate) enter(ctx context.Context, hold time.Duration, e entry) (func(), error) {
	p := priorityOf(ctx)
	g.mu.Lock()
	if c, _ := ctx.Value(claimKey{}).(*claim); c != nil && c.g == g {
		c.dropLocked() // it has arrived: from here it is judged as it stands
	}
	if g.mayTake(p) && g.next() < 0 {
		// A slot this caller may use and no waiter that may use it first.
		g.free--
		g.mu.Unlock()
		return g.release, nil
	}
	target, wait, refused := g.judge(ctx, p, hold, e, 0)
	if refused != nil {
		g.mu.Unlock()
		return nil, refused
	}
	var patience <-chan time.Time
	if target > 0 {
		t := time.NewTimer(target)
		defer t.Stop()
		patience = t.C
	}
	w := &waiter{priority: p, ready: make(chan struct{}), since: g.now(), hold: hold, budget: e.budget(p, hold)}
	if len(g.queue) == 0 {
		g.lastEmpty = g.now() // empty until now
	}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	var err error
	select {
	case <-w.ready:
		return w.outcome(g)
	case <-patience:
		err = &RefusedError{Reason: ErrSaturated, RetryAfter: wait}
	case <-ctx.Done():
		err = fmt.Errorf("waiting for a connection: %w", ctx.Err())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // handed a slot just as we gave up: use it after all
		return w.outcome(g)
	default:
		g.remove(w)
	}
	return nil, err
}

// judge decides, under g.mu, on a caller that cannot take a slot at once:
// refused now (the class's queue cap, or a predicted wait that does not fit
// its share of its deadline), or queued for at most target (0: until its
// context ends). wait is its predicted wait: the queued-th waiter waits
// queued × hold ÷ connections; ahead is how many claims will queue before
// it (claim.go).
func (g *gate) judge(ctx context.Context, p Priority, hold time.Duration, e entry, ahead int) (target, wait time.Duration, refused *RefusedError) {
	queued := len(g.queue) + ahead + 1
	wait = time.Duration(float64(queued) * float64(hold) / float64(g.conns))
	if e.hasMax && int64(queued) > e.maxWaiting {
		return 0, wait, &RefusedError{Reason: ErrSaturated, RetryAfter: wait}
	}
	deadline, ok := ctx.Deadline()
	if !e.byDeadline || !ok {
		return 0, wait, nil
	}
	target = time.Duration(p.share() * float64(time.Until(deadline)))
	if p != Critical && g.overloaded() {
		// A queue that has not drained for lifoAfter is a standing
		// queue: waiting in it only adds delay (CoDel). Reads may wait
		// a couple of connection holds, no more.
		target = min(target, max(minStandingWait, 2*hold))
	}
	if wait > target {
		// It would wait longer than it can afford: refuse now, while
		// refusing costs nothing, instead of at its deadline.
		return 0, wait, &RefusedError{Reason: ErrSaturated, RetryAfter: wait}
	}
	return max(target, time.Nanosecond), wait, nil
}

// overloaded reports a standing queue: non-empty for longer than lifoAfter.
func (g *gate) overloaded() bool {
	return len(g.queue) > 0 && g.now().Sub(g.lastEmpty) > lifoAfter
}

// minStandingWait is the least a read may wait in a standing queue, however
// short connections are held.
const minStandingWait = 5 * time.Millisecond

// mayTake reports whether a caller of priority p may take a free slot.
// The reserve is work-conserving: a read may borrow a reserved connection
// while no checkout waits (kept idle, it served nobody while orders were
// few); a checkout that then finds every connection busy waits at the
// front (next) for the first one handed back, one query at most.
func (g *gate) mayTake(p Priority) bool {
	if p == Critical || g.free > g.reserved {
		return g.free > 0
	}
	return g.free > 0 && !g.criticalWaits()
}

func (g *gate) criticalWaits() bool {
	for _, w := range g.queue {
		if w.priority == Critical {
			return true
		}
	}
	return false
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

// releaseLocked returns a slot and hands it to the next waiter that may
// take it: critical first; among equals the oldest, or the newest once the
// queue has been non-empty for lifoAfter. A waiter that has outstayed the
// standing queue's budget is refused instead (overdue), so what is served
// was queued for about the budget at most.
func (g *gate) releaseLocked() {
	g.free++
	for g.free > 0 {
		i := g.next()
		if i < 0 {
			break
		}
		w := g.queue[i]
		late := g.overdue(w) // while w still keeps the queue standing
		g.queue = append(g.queue[:i], g.queue[i+1:]...)
		if late {
			wait := time.Duration(float64(len(g.queue)+1) * float64(w.hold) / float64(g.conns))
			w.refused = &RefusedError{Reason: ErrSaturated, RetryAfter: wait}
		} else {
			g.free--
		}
		close(w.ready)
	}
	if len(g.queue) == 0 {
		g.lastEmpty = g.now()
	}
}

// next picks the waiter to serve, or -1. With a slot free every waiter may
// take it (mayTake: a read is held back from the reserve only while a
// checkout waits, and then the checkout is picked), so no waiter is
// skipped.
func (g *gate) next() int {
	if g.free == 0 {
		return -1
	}
	lifo := g.overloaded()
	best := -1
	for i, w := range g.queue {
		switch {
		case best < 0:
			best = i
		case w.priority == Critical && g.queue[best].priority != Critical && g.reserved > 0:
			best = i
		case w.priority == g.queue[best].priority && lifo:
			best = i // later in the queue is newer
		}
	}
	return best
}

func (g *gate) remove(w *waiter) {
	for i, q := range g.queue {
		if q == w {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			break
		}
	}
	if len(g.queue) == 0 {
		g.lastEmpty = g.now()
	}
}

// queued is how many callers wait at the gate.
func (g *gate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
