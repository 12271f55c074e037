package db

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// MayHaveApplied reports whether a write's last step (a COMMIT, or a
// statement that commits itself) that failed with err may still have
// committed: unless the server answered (a PgError, including a statement
// timeout: the statement and its transaction rolled back) or no connection
// was ever made, the answer was lost — a deadline, a cancel, a dropped link
// — and the commit may have happened. So "try again" could apply the write
// twice. A refusal by the pool (its gate, its breaker, no free connection)
// never reached the server.
//
// pgconn.SafeToRetry is not trusted here: pgx reports a COMMIT whose
// answer was lost to a dropped link as "conn closed", which it calls safe
// to retry (the read error is dropped and a closed connection found next).
func MayHaveApplied(err error) bool {
	var (
		pgErr   *pgconn.PgError
		refused *RefusedError
	)
	switch {
	case err == nil, errors.As(err, &pgErr), isConnect(err):
		return false
	case errors.As(err, &refused), errors.Is(err, ErrAcquireTimeout):
		return false // the pool never handed out a connection
	}
	return true
}
