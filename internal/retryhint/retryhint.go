// Package retryhint carries "a retry can succeed after d" on an error across
// package boundaries. The layer that knows when (a lock's remaining TTL, a
// queue's drain time) says so where it fails; the one writer of refusals
// (middleware.Refuse) finds it through any error in the chain with a
// RetryHint method, so clients get a Retry-After computed from what refused
// them rather than a guess, and retry when it can help instead of at once.
package retryhint

import "time"

// Error is err with the time after which a retry can succeed.
type Error struct {
	Err   error
	After time.Duration
}

// New wraps err with a retry hint.
func New(err error, after time.Duration) error { return &Error{Err: err, After: after} }

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap lets errors.Is match the reason.
func (e *Error) Unwrap() error { return e.Err }

// RetryHint is when a retry can succeed.
func (e *Error) RetryHint() time.Duration { return e.After }
