package repo

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/stampede-guard/api/db"
)

// Retry policy: this is the only layer of the service that retries (the
// cache and the handlers do not); the Go client in client/ retries only what
// the service answers it did not act on, or what is safe to repeat.
const (
	maxAttempts = 3
	backoffBase = 50 * time.Millisecond
	backoffCap  = 500 * time.Millisecond
)

// retry runs fn up to maxAttempts times while it fails with a transient
// error (connection refused or reset before the statement was sent,
// serialization failure, deadlock), sleeping with full jitter between
// attempts. Any other error — not found, validation, out of stock, a refusal
// by the breaker or the shedder — returns at once: repeating it cannot help.
// Nor is a write whose outcome is unknown repeated (ErrOutcomeUnknown): its
// first attempt may have committed, and a lost COMMIT answer can look
// transient (see db.MayHaveApplied).
func retry(ctx context.Context, fn func() error) error {
	return retryWhile(ctx, fn, func(err error) bool { return db.IsTransient(err) && !errors.Is(err, ErrOutcomeUnknown) })
}

// retryWhile is retry with its own judgement of which errors to repeat.
func retryWhile(ctx context.Context, fn func() error, again func(error) bool) error {
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(); err == nil || !again(err) || attempt == maxAttempts {
			return err
		}
		if !sleep(ctx, backoff(attempt, rand.Float64)) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// backoff is "full jitter" (AWS architecture blog): uniform in
// [0, min(cap, base·2^(attempt-1))), which spreads retries of many clients
// instead of synchronising them.
func backoff(attempt int, rnd func() float64) time.Duration {
	ceiling := min(backoffCap, backoffBase<<(attempt-1))
	return time.Duration(rnd() * float64(ceiling))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
