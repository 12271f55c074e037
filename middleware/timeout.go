package middleware

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// Timeout gives every request a deadline. Everything below passes
// c.Request.Context() on, so the database acquire, the lock wait and the
// query all stop when it fires, and the handler answers 503/504 instead of
// holding a connection for a client that has stopped waiting.
//
// The deadline is armed only when something waits on it (see deadline): an
// answer from memory never does, and arming one per request (a timer, and
// a place among the request context's children) cost a tenth of a hot
// key's answer.
func Timeout(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := newDeadline(c.Request.Context(), time.Now().Add(d))
		defer ctx.release()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// deadline is context.WithDeadline(parent, at), made only on first use:
// Deadline and Value answer without it; Done, Err, context.Cause (which
// asks Err first) or a context derived from this one (which asks Done)
// make it. Until then a request pays for no timer.
//
// Made late, it still answers as one made at the start would, with one
// exception: when the client left before the deadline and nothing asked
// until after it, Err says DeadlineExceeded rather than Canceled (both
// happened; which came first was never recorded).
type deadline struct {
	parent     context.Context
	at         time.Time
	mu         sync.Mutex                   // serializes making armed; guards released, endedEarly
	armed      atomic.Pointer[armedContext] // nil until first use
	released   bool                         // the request has ended
	endedEarly bool                         // ... before its deadline
}

type armedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newDeadline(parent context.Context, at time.Time) *deadline {
	return &deadline{parent: parent, at: at}
}

// arm returns the real context, making it on the first call.
func (d *deadline) arm() context.Context {
	if a := d.armed.Load(); a != nil {
		return a.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.armed.Load(); a != nil {
		return a.ctx
	}
	var a armedContext
	switch {
	case d.released && d.endedEarly:
		// Used after its request ended: what WithDeadline's cancel leaves.
		a.ctx, a.cancel = context.WithCancel(d.parent)
		a.cancel()
	case !time.Now().Before(d.at):
		// The deadline came first (a parent cancelled since must not
		// rewrite that); the parent's values stay.
		a.ctx, a.cancel = context.WithDeadline(context.WithoutCancel(d.parent), d.at)
	default:
		a.ctx, a.cancel = context.WithDeadline(d.parent, d.at)
	}
	d.armed.Store(&a)
	return a.ctx
}

// release ends the context when the request ends, as the cancel of
// context.WithDeadline does: a use after it sees a cancelled context.
func (d *deadline) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released = true
	if a := d.armed.Load(); a != nil {
		a.cancel()
		return
	}
	d.endedEarly = time.Now().Before(d.at)
}

// Deadline is the earlier of the parent's deadline and at, whichever
// context arm made.
func (d *deadline) Deadline() (time.Time, bool) {
	if t, ok := d.parent.Deadline(); ok && t.Before(d.at) {
		return t, true
	}
	return d.at, true
}

func (d *deadline) Done() <-chan struct{} { return d.arm().Done() }

func (d *deadline) Err() error { return d.arm().Err() }

func (d *deadline) Value(key any) any {
	if a := d.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return d.parent.Value(key)
}

func (d *deadline) String() string { return "middleware.Timeout deadline" }
