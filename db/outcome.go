package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MayHaveApplied reports whether a write's last step (a COMMIT, or a
// statement that commits itself) that failed with err may still have
// committed: the answer was lost — a deadline, a cancel, a dropped link —
// and the commit may have happened, so "try again" could apply the write
// twice. It is false when the step surely did not commit: the server
// answered with an error (the statement and its transaction rolled back)
// or with ROLLBACK, the context had ended before anything was sent, no
// connection was made, or the pool refused (its gate, its breaker, no free
// connection).
//
// pgconn.SafeToRetry alone is not trusted: pgx reports a COMMIT whose
// answer a dropped link lost as "conn closed", which it calls safe to
// retry (the read error is dropped and a closed connection found next).
// A connection error from a pooler (class 08: PgBouncer's "server conn
// crashed?") is no answer from PostgreSQL either.
func MayHaveApplied(err error) bool {
	var (
		pgErr   *pgconn.PgError
		refused *RefusedError
	)
	switch {
	case err == nil, isConnect(err), errors.Is(err, pgx.ErrTxCommitRollback):
		return false
	case errors.As(err, &pgErr):
		return pgErr.Code[:2] == "08"
	case errors.As(err, &refused), errors.Is(err, ErrAcquireTimeout):
		return false
	case pgconn.SafeToRetry(err) && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		return false // the context had ended before the step was sent
	}
	return true
}
