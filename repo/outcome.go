package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// So a COMMIT is not sent when the request's deadline leaves less than
// commitRoom(BEGIN's round trip): its answer could not come back in time,
// and the client would get "may or may not have been applied" (504) for a
// write that most likely committed. Rolled back instead, it is a definite
// 503: nothing written, retry.
func inTx(ctx context.Context, conn db.Conn, fn func(pgx.Tx) error) error {
	start := time.Now()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return notApplied(err)
	}
	roundTrip := time.Since(start)
	// After a COMMIT this is a no-op; after a failure (or a panic) it ends
	// the transaction, as pgx.BeginTxFunc does.
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return notApplied(err) // rolled back, however it failed
	}
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < commitRoom(roundTrip) {
			return notApplied(fmt.Errorf("not committed: %s left of the request's deadline, a round trip takes %s: %w",
				left.Round(time.Millisecond), roundTrip.Round(time.Millisecond), context.DeadlineExceeded))
		}
	}
	return lastStep(tx.Commit(ctx))
}

// commitRoom is how much of its deadline a COMMIT needs: its round trip
// (measured on the BEGIN of the same transaction) and half as much again
// for the flush to disk and the link's jitter.
func commitRoom(roundTrip time.Duration) time.Duration { return roundTrip * 3 / 2 }

// answered reports whether err is the database's answer about the request
// itself (not enough stock, no such product, a reused key, a bad value),
// which holds whatever an earlier attempt did.
func answered(err error) bool {
	var capped *QuantityLimitError
	return errors.Is(err, ErrOutOfStock) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdempotencyMismatch) || errors.Is(err, ErrTotalOverflow) ||
		errors.As(err, &capped) || db.IsDataException(err)
}
