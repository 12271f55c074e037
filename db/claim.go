package db

import (
	"context"
	"time"

	"github.com/stampede-guard/api/internal/breaker"
)

// A claim is a place at the gate taken by a caller that has round trips
// to make before its statement (a cache miss reads Redis, takes the key's
// lock and reads again first). Asking the gate without taking anything
// lets a whole burst see the same free connection: each of 200 cold reads
// found the gate empty, since none had reached it yet, spent four Redis
// round trips queueing for the Redis pool behind the others, and only then
// heard the gate refuse it, 60 ms or more after it arrived. A claim counts
// as demand from the moment it is taken, so the burst is cut to what the
// connections and the queue hold at once, and everyone else is refused at
// memory speed.
type claim struct {
	g    *gate
	open bool // guarded by g.mu
}

type claimKey struct{}

// claim judges a caller as enter would, counting the claims still on
// their way as ahead of it (on the free slots first, then in the queue),
// and takes a place when it would be admitted.
func (g *gate) claim(ctx context.Context, hold time.Duration, e entry) (*claim, *RefusedError) {
	p := priorityOf(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	open := g.free // the slots this caller may take, as mayTake judges
	if p != Critical && g.criticalWaits() {
		open = max(0, g.free-g.reserved)
	}
	if g.claims >= open || g.next() >= 0 {
		if _, _, refused := g.judge(ctx, p, hold, e, max(0, g.claims-open)); refused != nil {
			return nil, refused
		}
	}
	g.claims++
	return &claim{g: g, open: true}, nil
}

// release gives the place back: the caller will not reach the gate (its
// value was found, or another instance loads it). Idempotent, and a no-op
// once the caller has entered the gate.
func (c *claim) release() {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.dropLocked()
}

func (c *claim) dropLocked() {
	if c.open {
		c.open = false
		c.g.claims--
	}
}

// Claim says whether a statement would be refused at once now (the breaker
// open, or the gate refusing the caller's class: its queue cap, or a wait
// that does not fit its deadline) and, when it would not, holds the
// caller's place at the gate until it gets there. Statements run under the
// returned ctx use the place; release gives it back if none will (call it
// in any case once done: it is idempotent). A caller with round trips to
// make before its statement claims first, so that a request that will be
// refused hears it at memory speed, and a burst cannot all pass at once.
func (p *Pool) Claim(ctx context.Context) (context.Context, func(), error) {
	if s := p.breaker.Snapshot(); s.State != breaker.Closed {
		p.tripped.Add(1)
		return ctx, noRelease, &RefusedError{Pool: p.cfg.Name, Reason: ErrCircuitOpen, RetryAfter: time.Duration(s.NextProbeSeconds * float64(time.Second))}
	}
	limit, hasMax := maxWaiting(ctx)
	c, refused := p.gate.claim(ctx, p.holdTime(), entry{
		byDeadline: p.cfg.Admission == AdmitDeadline, maxWaiting: limit, hasMax: hasMax,
	})
	if refused != nil {
		p.shed.Add(1)
		refused.Pool = p.cfg.Name
		refused.RetryAfter = max(time.Second, refused.RetryAfter)
		return ctx, noRelease, refused
	}
	return context.WithValue(ctx, claimKey{}, c), c.release, nil
}

func noRelease() {}
