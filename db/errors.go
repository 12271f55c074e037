package db

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL error codes this application reacts to.
const (
	codeUniqueViolation      = "23505"
	codeQueryCanceled        = "57014" // statement_timeout fired
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeOutOfRange           = "22003" // numeric_value_out_of_range
	codeLockNotAvailable     = "55P03" // lock_timeout fired
)

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally on the named constraint ("" matches any).
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != codeUniqueViolation {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// IsDataException reports whether the server rejected a value the client
// sent (class 22: invalid encoding, NUL byte, out of range): the request's
// fault, never the database's.
func IsDataException(err error) bool {
	code := pgCode(err)
	return len(code) == 5 && code[:2] == "22"
}

// IsOutOfRange reports whether a number the statement computed or was
// given does not fit its column's type.
func IsOutOfRange(err error) bool { return pgCode(err) == codeOutOfRange }

// IsStatementTimeout reports whether the server cancelled the statement
// because it ran past statement_timeout.
func IsStatementTimeout(err error) bool { return pgCode(err) == codeQueryCanceled }

// IsLockTimeout reports whether the server gave up waiting for a lock
// another transaction holds (lock_timeout): that transaction's doing, not
// an outage, and nothing of this statement was applied.
func IsLockTimeout(err error) bool { return pgCode(err) == codeLockNotAvailable }

// IsTransient reports whether repeating the same statement may succeed:
// serialization failures, deadlocks, and connection-level failures that
// happened before the server could have done the work.
func IsTransient(err error) bool {
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return pgconn.SafeToRetry(err)
}

// IsCheckViolation reports whether err is PostgreSQL refusing a row because
// of the named CHECK constraint.
func IsCheckViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == constraint
}
