package repo

// Product writes: create and update in the database, then the write-through
// (writethrough.go) that refreshes the cached entry on every instance. A
// conditional update checks its precondition on the locked row, so of two
// editors holding one version exactly one wins (lost updates).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stampede-guard/api/db"
)

// createTries bounds the ids a Create tries when the sequence's ids are
// taken (see Create).
const createTries = 8

// Create inserts a product and writes it through to the cache, replacing a
// negative entry that a read of the not-yet-existing id may have left.
func (p *Products) Create(ctx context.Context, in NewProduct) (Product, error) {
	var pr Product
	err := p.write(ctx, func(conn db.Conn) error {
		// An id the sequence hands out may already be taken by a row
		// inserted with an id of its own (an import without setval): that
		// INSERT inserts nothing, and the next id is tried, a few times.
		// It answered 500 (a duplicate key) for the client's first try.
		for range createTries {
			// The INSERT commits itself: it is the write's last step. It
			// goes in one round trip (QueryExecModeExec): a separate
			// prepare step that failed would read as the INSERT's own
			// unknown outcome.
			err := conn.QueryRow(ctx,
				`INSERT INTO products (name, price_cents, stock) VALUES ($1, $2, $3)
				 ON CONFLICT (id) DO NOTHING RETURNING `+productColumns, pgx.QueryExecModeExec, in.Name, in.PriceCents, in.Stock,
			).Scan(pr.fields()...)
			if !errors.Is(err, pgx.ErrNoRows) {
				return lastStep(err)
			}
		}
		return fmt.Errorf("%d ids in a row from the products' id sequence were taken: move it past the table's ids "+
			"(SELECT setval(pg_get_serial_sequence('products', 'id'), max(id)) FROM products)", createTries)
	})
	if err != nil {
		return Product{}, unavailable(fmt.Errorf("create product: %w", err), p.pool)
	}
	if p.known != nil {
		p.known.add(pr.ID)
	}
	p.writeThrough(ctx, pr.ID)
	return pr.inUTC(), nil
}

// Update replaces a product's name and price (and adjusts its stock, if
// asked), then refreshes the cached entry on every instance. With
// in.Precondition the row is locked, the precondition checked and the
// update made in one transaction, so of two editors holding the same
// version exactly one wins. updated_at moves strictly forward, even when a transaction that
// started earlier commits later: it is the cached entry's version
// (EntryVersion), below which an entry is refused as a replay.
func (p *Products) Update(ctx context.Context, id int64, in ProductUpdate) (Product, error) {
	var pr Product
	err := p.writeRow(ctx, id, func(conn db.Conn) error {
		return inTx(ctx, conn, func(tx pgx.Tx) error {
			if in.Precondition != nil {
				if err := checkPrecondition(ctx, tx, id, in.Precondition); err != nil {
					return err
				}
			}
			return tx.QueryRow(ctx,
				`UPDATE products SET name = $2, price_cents = $3, stock = stock + COALESCE($4, 0),
				     updated_at = GREATEST(now(), updated_at + interval '1 microsecond')
				 WHERE id = $1 RETURNING `+productColumns, id, in.Name, in.PriceCents, in.StockDelta,
			).Scan(pr.fields()...)
		})
	})
	switch {
	case errors.Is(err, ErrPreconditionFailed):
		return Product{}, fmt.Errorf("update product %d: %w", id, err)
	case errors.Is(err, ErrOutcomeUnknown):
		// It may have committed, or may still be committing: refresh the
		// entry from what settles (selectSettled waits for the row's
		// lock), or a read back — what the 504 advises — would show the
		// old row, and a retried stock adjustment would apply twice.
		p.refresh(ctx, id, selectSettled)
		return Product{}, fmt.Errorf("update product %d: %w", id, err)
	case errors.Is(err, pgx.ErrNoRows):
		return Product{}, fmt.Errorf("update product %d: %w", id, ErrNotFound)
	case db.IsCheckViolation(err, "products_stock_check"):
		return Product{}, fmt.Errorf("update product %d: stock adjustment %d: %w", id, *in.StockDelta, ErrOutOfStock)
	case in.StockDelta != nil && db.IsOutOfRange(err):
		return Product{}, fmt.Errorf("update product %d: stock adjustment %d: %w", id, *in.StockDelta, ErrStockOverflow)
	case err != nil:
		return Product{}, unavailable(fmt.Errorf("update product %d: %w", id, err), p.pool)
	}
	p.writeThrough(ctx, pr.ID)
	return pr.inUTC(), nil
}

// checkPrecondition locks product id and fails with ErrPreconditionFailed
// unless ok accepts its current version. An absent product fails too: a
// conditional update asks for a current one (If-Match, RFC 9110 §13.1.1).
func checkPrecondition(ctx context.Context, tx pgx.Tx, id int64, ok func(Product) bool) error {
	var cur Product
	err := tx.QueryRow(ctx, `SELECT `+productColumns+` FROM products WHERE id = $1 FOR UPDATE`, id).Scan(cur.fields()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrPreconditionAbsent
	}
	if err != nil {
		return err
	}
	if cur = cur.inUTC(); !ok(cur) {
		return fmt.Errorf("current version %s: %w", cur.UpdatedAt.Format(time.RFC3339Nano), ErrPreconditionFailed)
	}
	return nil
}

// write is with for a write (writeFailed).
func (p *Products) write(ctx context.Context, fn func(db.Conn) error) error {
	return writeFailed(p.with(ctx, fn))
}

// writeRow is write for a write of product id's row: it waits for one of
// the row's places (db.Pool.WithKey) before it takes a connection.
func (p *Products) writeRow(ctx context.Context, id int64, fn func(db.Conn) error) error {
	return writeFailed(retry(ctx, func() error { return p.pool.WithKey(ctx, id, fn) }))
}
