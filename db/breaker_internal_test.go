package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestIsOutage: only failures of the database itself count against the
// breaker (and answer 503); anything about the request does not.
func TestIsOutage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"no rows", fmt.Errorf("get: %w", pgx.ErrNoRows), false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"check violation", &pgconn.PgError{Code: "23514"}, false},
		{"caller cancelled", fmt.Errorf("q: %w", context.Canceled), false},
		{"caller deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), false},
		{"pool full", fmt.Errorf("x: %w", ErrAcquireTimeout), false},
		{"shed", &RefusedError{Reason: ErrSaturated}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		// The server ended a session whose next command came too late.
		{"idle in transaction too long", &pgconn.PgError{Severity: "FATAL", Code: "25P03"}, true},
		{"transaction too long", &pgconn.PgError{Severity: "FATAL", Code: "25P04"}, true},
		{"in a failed transaction", &pgconn.PgError{Code: "25P02"}, false},
		{"connection lost mid-query", fmt.Errorf("select: %w", io.ErrUnexpectedEOF), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"closed connection", fmt.Errorf("x: %w", net.ErrClosed), true},
		{"plain error", errors.New("boom"), false},
		{"server hung past statement_timeout", fmt.Errorf("%w: %w", ErrServerHung, context.DeadlineExceeded), true},
	}
	for _, tc := range tests {
		if got := isOutage(tc.err); got != tc.want {
			t.Errorf("%s: isOutage(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// safeToRetry is an error pgconn.SafeToRetry believes.
type safeToRetry struct{ error }

func (e safeToRetry) Unwrap() error { return e.error }

func (safeToRetry) SafeToRetry() bool { return true }

// TestMayHaveApplied: only a statement that was sent and never answered
// may have changed the database.
func TestMayHaveApplied(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the server refused it", &pgconn.PgError{Code: "23505"}, false},
		{"the server cancelled it", &pgconn.PgError{Code: "57014"}, false},
		{"the gate refused it", &RefusedError{Reason: ErrSaturated}, false},
		{"no connection", fmt.Errorf("x: %w", ErrAcquireTimeout), false},
		{"never connected", &pgconn.ConnectError{}, false},
		{"deadline while waiting for the answer", fmt.Errorf("q: %w", context.DeadlineExceeded), true},
		{"server hung", fmt.Errorf("%w: %w", ErrServerHung, context.DeadlineExceeded), true},
		{"connection lost mid-query", fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		// How pgx reports a COMMIT whose answer a dropped link lost.
		{"conn closed, said safe to retry", fmt.Errorf("commit: %w", safeToRetry{errors.New("conn closed")}), true},
		// How pgx reports a step it never sent: the context had ended.
		{"context already done", fmt.Errorf("commit: %w", safeToRetry{context.DeadlineExceeded}), false},
		{"the server rolled back", fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback), false},
		{"the pooler lost the server", &pgconn.PgError{Code: "08P01", Message: "server conn crashed?"}, true},
	}
	for _, tc := range tests {
		if got := MayHaveApplied(tc.err); got != tc.want {
			t.Errorf("%s: MayHaveApplied(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
