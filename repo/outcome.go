package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// ErrOutcomeUnknown: a write's last step (its COMMIT, or a statement that
// commits itself) was sent and its answer never came, so the write may or
// may not have been applied. It is not ErrUnavailable: "retry later" would
// let a client apply it twice (a second product, a doubled stock
// adjustment, a second order without an Idempotency-Key).
var ErrOutcomeUnknown = errors.New("the write may or may not have been applied")

// lastStep marks the failure of a write's last step as ErrOutcomeUnknown
// when it may have committed (db.MayHaveApplied); any other error passes
// through.
func lastStep(err error) error {
	if db.MayHaveApplied(err) {
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return notApplied(err)
}

// notApplied marks a write that surely did not commit: when the request's
// deadline cut it, it is ErrUnavailable (503, "nothing written, retry"),
// not the 504 a read past its deadline gets, which a client must treat as
// a write that may have been applied.
func notApplied(err error) error {
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: not applied: %w", ErrUnavailable, err)
	}
	return err
}

// writeFailed is a finished write's error. Every step that may have
// committed is marked ErrOutcomeUnknown (lastStep), which stays; any other
// failure wrote nothing, the request's deadline met while waiting for a
// connection or between attempts included (notApplied). nil stays nil.
func writeFailed(err error) error {
	if errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	return notApplied(err)
}

// inTx runs fn in a transaction on conn and commits it. A failure inside
// fn rolls the transaction back, which is a definite failure however it
// happened; only the COMMIT's can leave the outcome unknown (lastStep).
func inTx(ctx context.Context, conn db.Conn, fn func(pgx.Tx) error) error {
	committing := false
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		committing = true // BeginTxFunc's COMMIT comes next
		return nil
	})
	if committing {
		return lastStep(err)
	}
	return notApplied(err) // rolled back, however it failed
}

// answered reports whether err is the database's answer about the request
// itself (not enough stock, no such product, a reused key, a bad value),
// which holds whatever an earlier attempt did.
func answered(err error) bool {
	var capped *QuantityLimitError
	return errors.Is(err, ErrOutOfStock) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdempotencyMismatch) || errors.Is(err, ErrTotalOverflow) ||
		errors.As(err, &capped) || db.IsDataException(err)
}
