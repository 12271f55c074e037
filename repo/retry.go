package repo

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/stampede-guard/api/db"
)

// Retry policy: this is the only layer that retries (the cache, handlers
// and clients of this template do not), so attempts never multiply.
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
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(); err == nil || !db.IsTransient(err) || attempt == maxAttempts {
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
