package db

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stampede-guard/api/internal/breaker"
)

// newBreaker guards the pool with the shared breaker policy. Only outages
// count against it; errors about the caller or the request are excluded
// (counted neither way, so they do not reset a failure streak). While it is
// open, the probe is a SELECT 1 on a fresh acquire from this pool, run by
// the breaker itself, never a user's query.
func newBreaker(p *Pool) *breaker.Breaker {
	cfg := p.cfg.Breaker
	if cfg.Name == "" {
		cfg.Name = "postgres_" + p.cfg.Name
	}
	if cfg.ProbeTimeout <= 0 {
		// Room for a connect (3/4 of it, see connectTimeout) and the query.
		cfg.ProbeTimeout = max(p.cfg.AcquireTimeout, connectTimeout(p.cfg.AcquireTimeout)*4/3)
	}
	cfg.IsExcluded = isCallerSide
	cfg.IsFailure = isOutage
	cfg.Probe = p.probe
	return breaker.New(cfg)
}

// probe is the breaker's health query: it bypasses the breaker and the
// waiting count, and any error fails it.
func (p *Pool) probe(ctx context.Context) error {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// IsOutage reports whether err means the database itself is failing
// (unreachable, refusing connections, shutting down, out of resources, too
// slow to answer in time) rather than something about the request. Callers
// answer such errors with "retry later" (503), not with an internal error.
func IsOutage(err error) bool { return isOutage(err) }

// ErrServerHung marks a call whose connection was held well past
// statement_timeout: the server did not enforce its own timeout, so it is
// frozen or unreachable, even though only the caller's deadline fired.
var ErrServerHung = errors.New("db: server did not answer within statement_timeout")

// isCallerSide reports errors caused by the caller or by our own admission
// control rather than by the database: a cancellation, the caller's own
// deadline (statement_timeout, not the request deadline, is the database's
// slowness signal; a connect timeout or a hung server is the database's
// fault), a full pool, a shed request.
func isCallerSide(err error) bool {
	if errors.Is(err, ErrServerHung) {
		return false
	}
	return errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) && !isConnect(err) ||
		errors.Is(err, ErrAcquireTimeout) || errors.Is(err, ErrSaturated)
}

// isOutage says whether err means the database itself is failing. A missing
// row, a constraint violation, a full pool or a caller that gave up say
// nothing about the database's health and must not open the breaker.
func isOutage(err error) bool {
	switch {
	case errors.Is(err, ErrServerHung):
		return true
	case err == nil, errors.Is(err, pgx.ErrNoRows), isCallerSide(err):
		return false
	case IsStatementTimeout(err):
		return true // the server is too slow to answer in time
	case isConnect(err):
		// No connection, whatever the server said while refusing it (55000
		// "not accepting connections", 3D000 a dropped database, 28P01 a
		// rotated password): no request of ours was read, so nothing about
		// the request can be wrong. Judged by its code it read as a request
		// error: reads answered 500 and the breaker never opened.
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server answered: classes 08 (connection), 53 (resources),
		// 57 (operator intervention, e.g. shutdown) and 58 (system) are
		// outages; everything else is about the request.
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58":
			return true
		}
		// The server ended the session because the next command of a
		// transaction came too late (idle_in_transaction_session_timeout,
		// PostgreSQL 17's transaction_timeout): a slow link or a paused
		// client, not the request. The transaction rolled back.
		return pgErr.Code == "25P03" || pgErr.Code == "25P04"
	}
	// A connection lost mid-query surfaces as a bare (unexpected) EOF, with
	// no net.Error around it.
	var netErr net.Error
	return errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

func isConnect(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}
