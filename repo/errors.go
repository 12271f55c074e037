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
func unavailable(err error, fallback time.Duration) error {
	var refused *db.RefusedError
	switch {
	case err == nil:
		return nil
	case db.IsDataException(err):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.As(err, &refused):
		return &UnavailableError{RetryAfter: refused.RetryAfter, Cause: err}
	case errors.Is(err, db.ErrAcquireTimeout),
		errors.Is(err, cache.ErrLockTimeout),
		db.IsTransient(err),
		// The database is unreachable, failing or too slow (a connection
		// refused or reset while the breaker is still closed, a statement
		// timeout): as temporary as a refusal, so 503 + Retry-After.
		db.IsOutage(err):
		return &UnavailableError{RetryAfter: fallback, Cause: err}
	}
	return err
}
