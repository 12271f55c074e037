package db

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// MayHaveApplied reports whether a failed statement may still have changed
// the database: it was sent (pgconn.SafeToRetry is false), and no answer
// came back — the deadline passed, the call was cancelled, the server hung
// or the connection was lost. A statement that ends a write (a COMMIT, or
// one that commits itself) failing this way may have committed, so "try
// again" could apply the write twice. An answer from the server (a
// PgError, including a statement timeout) is a definite failure: the
// statement, and its transaction, were rolled back.
func MayHaveApplied(err error) bool {
	var pgErr *pgconn.PgError
	if err == nil || errors.As(err, &pgErr) || pgconn.SafeToRetry(err) || isConnect(err) {
		return false
	}
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, ErrServerHung) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
