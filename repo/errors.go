package repo

import (
	"errors"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
)

// unavailable translates infrastructure failures that mean "try again
// soon" into an UnavailableError, once, at the bottom of the stack. Other
// errors pass through unchanged.
func unavailable(err error, retryAfter time.Duration) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, db.ErrAcquireTimeout),
		errors.Is(err, cache.ErrLockTimeout),
		db.IsStatementTimeout(err):
		return &UnavailableError{RetryAfter: retryAfter, Cause: err}
	}
	return err
}
