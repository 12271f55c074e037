package db

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sony/gobreaker/v2"
)

// BreakerConfig tunes the circuit breaker around one pool. Zero values take
// the documented defaults.
type BreakerConfig struct {
	Failures    uint32        // consecutive failures that open it; default 5
	OpenFor     time.Duration // how long it stays open; default 5 seconds
	HalfOpenMax uint32        // probes admitted while half-open; default 3
	// OnStateChange is told of every transition (for logs and metrics).
	OnStateChange func(pool string, from, to gobreaker.State)
}

// breaker wraps gobreaker and remembers when it opened, so a refusal can say
// how long is left (a Retry-After that means something).
type breaker struct {
	cb       *gobreaker.CircuitBreaker[struct{}]
	openFor  time.Duration
	openedAt atomic.Int64 // unix nanos of the last transition to open
}

func newBreaker(pool string, cfg BreakerConfig) *breaker {
	if cfg.Failures == 0 {
		cfg.Failures = 5
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 5 * time.Second
	}
	if cfg.HalfOpenMax == 0 {
		cfg.HalfOpenMax = 3
	}
	b := &breaker{openFor: cfg.OpenFor}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        pool,
		MaxRequests: cfg.HalfOpenMax,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.Failures },
		// gobreaker counts every error as a failure unless told otherwise.
		// Errors that say nothing about the database (the caller gave up,
		// the pool was full) are excluded: counted neither way, so they do
		// not reset the failure streak or close a half-open breaker.
		IsExcluded:   isCallerSide,
		IsSuccessful: func(err error) bool { return !isOutage(err) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(time.Now().UnixNano())
			}
			if cfg.OnStateChange != nil {
				cfg.OnStateChange(name, from, to)
			}
		},
	})
	return b
}

// remaining is how long the breaker will stay open, at least one second.
func (b *breaker) remaining() time.Duration {
	left := b.openFor - time.Since(time.Unix(0, b.openedAt.Load()))
	return max(time.Second, left)
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
		return false
	}
	// A connection lost mid-query surfaces as a bare (unexpected) EOF, with
	// no net.Error around it.
	var netErr net.Error
	return isConnect(err) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

func isConnect(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}
