package repo

import (
	"errors"
	"fmt"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
)

// unavailable translates database errors once, at the bottom of the stack:
// failures that mean "try again soon" become an UnavailableError carrying
// the retry hint of whatever refused the work; a value the server rejected
// becomes ErrInvalid. Other errors pass through.
// retryHinter is an error that knows when a retry can succeed.
type retryHinter interface{ RetryHint() time.Duration }

// drainer estimates how long a pool's queue needs to drain: the retry hint
// of a failure that carries none of its own.
type drainer interface{ DrainEstimate() time.Duration }

func unavailable(err error, pool drainer) error {
	var hinted retryHinter
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrOutcomeUnknown):
		return err // not "try again": the write may have been applied
	case db.IsDataException(err):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.As(err, &hinted):
		// A refusal, an acquire timeout or a lock wait that knows when a
		// retry can succeed: a pool's drain time, a breaker's next probe, a
		// lock's expiry.
		return &UnavailableError{RetryAfter: hinted.RetryHint(), Cause: err}
	case errors.Is(err, db.ErrAcquireTimeout),
		errors.Is(err, cache.ErrLockTimeout),
		db.IsTransient(err),
		// A row lock another transaction held past lock_timeout: nothing
		// was written, and the holder will let go.
		db.IsLockTimeout(err),
		// The database is unreachable, failing or too slow (a connection
		// refused or reset while the breaker is still closed, a statement
		// timeout): as temporary as a refusal, so 503 + Retry-After.
		db.IsOutage(err):
		return &UnavailableError{RetryAfter: pool.DrainEstimate(), Cause: err}
	}
	return err
}
