package db

import (
	"errors"
	"math"
	"time"
)

var (
	// ErrSaturated: the pool's wait queue is already longer than this
	// request's priority allows, so it is refused before joining it.
	ErrSaturated = errors.New("db: pool saturated")
	// ErrCircuitOpen: the database breaker is open; nothing was sent.
	ErrCircuitOpen = errors.New("db: circuit breaker open")
)

// RefusedError is a call the pool refused without touching the database,
// with an estimate of when a retry can succeed.
type RefusedError struct {
	Pool       string
	Reason     error // ErrSaturated or ErrCircuitOpen
	RetryAfter time.Duration
}

// Error is built without fmt: under overload every refused request makes
// one, often in a fresh goroutine (the cache's shared load), where fmt's
// nested calls made the goroutine grow its stack (a tenth of a refusal's
// CPU in a profile of the refusal lab).
func (e *RefusedError) Error() string {
	reason := "refused"
	if e.Reason != nil {
		reason = e.Reason.Error()
	}
	return "db " + e.Pool + ": " + reason + " (retry after " + e.RetryAfter.Round(time.Millisecond).String() + ")"
}

// Unwrap lets errors.Is match the reason.
func (e *RefusedError) Unwrap() error { return e.Reason }

// RetryHint is when a retry can succeed.
func (e *RefusedError) RetryHint() time.Duration { return e.RetryAfter }

// DrainEstimate is how long the current queue needs to drain: waiters ×
// average connection hold time ÷ pool size, at least one second. It is the
// Retry-After of a refusal, so clients come back when there is room.
func (p *Pool) DrainEstimate() time.Duration {
	hold := time.Duration(p.holdNanos.Load())
	if hold <= 0 {
		hold = 10 * time.Millisecond
	}
	est := time.Duration(float64(p.Waiting()+1) * float64(hold) / float64(p.cfg.MaxConns))
	return max(time.Second, est)
}

// recordHold folds one connection hold time into an exponentially weighted
// moving average (weight 1/8), lock-free.
func (p *Pool) recordHold(d time.Duration) {
	for {
		old := p.holdNanos.Load()
		next := int64(d)
		if old > 0 {
			next = old + int64(math.Round(float64(int64(d)-old)/8))
		}
		if p.holdNanos.CompareAndSwap(old, next) {
			return
		}
	}
}
