package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// Order is a created order.
type Order struct {
	ID         int64     `json:"id"`
	ProductID  int64     `json:"product_id"`
	Quantity   int32     `json:"quantity"`
	TotalCents int64     `json:"total_cents"`
	CreatedAt  time.Time `json:"created_at"`
	// Token proves ownership: GET /orders/:id needs it. Only Create
	// returns it (the database keeps its hash), so reads leave it empty.
	Token string `json:"token,omitempty"`
}

// NewOrder is the input of Orders.Create. IdempotencyKey is optional;
// Scope is the caller it belongs to (an API key's id, "" for anonymous
// callers): one caller's key never finds another caller's order.
type NewOrder struct {
	ProductID      int64
	Quantity       int32
	IdempotencyKey string
	Scope          string
	// MaxQuantity caps Quantity (ORDER_MAX_QUANTITY; 0: no cap), so one
	// request cannot empty a product.
	MaxQuantity int32
}

// QuantityLimitError refuses an order above NewOrder.MaxQuantity for a
// product that has that much in stock.
type QuantityLimitError struct{ Max int32 }

func (e *QuantityLimitError) Error() string {
	return fmt.Sprintf("quantity must be from 1 to %d per order", e.Max)
}

// hash identifies the request body a key was first used with.
func (o NewOrder) hash() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d:%d", o.ProductID, o.Quantity))
	return hex.EncodeToString(sum[:])
}

// Orders is checkout: stock is checked and decremented in the same
// transaction that records the order, so concurrent buyers can never
// oversell, and a retried request with the same Idempotency-Key returns the
// first order instead of creating a second one.
type Orders struct {
	pool *db.Pool
	log  *slog.Logger
}

// NewOrders wires the orders repository on the main pool.
func NewOrders(pool *db.Pool, log *slog.Logger) *Orders { return &Orders{pool: pool, log: log} }

// Create places an order. replayed is true when the Idempotency-Key had
// already created this order, which is then returned unchanged.
func (o *Orders) Create(ctx context.Context, in NewOrder) (order Order, replayed bool, err error) {
	unknown := false // an attempt's COMMIT went unanswered
	attempt := func() error {
		// Keyed by the product: orders of one product wait for its row in
		// turn, and need not hold the pool's connections to do so.
		err := o.pool.WithKey(ctx, in.ProductID, func(conn db.Conn) error {
			return inTx(ctx, conn, func(tx pgx.Tx) error {
				order, replayed, err = o.create(ctx, tx, in)
				return err
			})
		})
		unknown = unknown || errors.Is(err, ErrOutcomeUnknown)
		return err
	}
	if in.IdempotencyKey != "" {
		// Only a keyed order is retried: after a transient failure, and
		// after a commit whose answer was lost, since the key makes the
		// repeat replay that order instead of placing a second one, and
		// turns "outcome unknown" into the order.
		err = retryWhile(ctx, attempt, func(err error) bool {
			return db.IsTransient(err) || errors.Is(err, ErrOutcomeUnknown)
		})
	} else {
		err = attempt()
	}
	// The unique constraint is the guarantee: if two transactions with one
	// key ever got past the advisory lock together, the loser lands here
	// and answers with the winner's order.
	if in.IdempotencyKey != "" && db.IsUniqueViolation(err, "orders_idempotency_scope_key") {
		err = o.pool.With(ctx, func(conn db.Conn) error {
			order, replayed, err = o.replay(ctx, conn, in)
			if err == nil && !replayed {
				return errors.New("idempotency key vanished after a unique violation")
			}
			return err
		})
	}
	if err != nil && unknown && !errors.Is(err, ErrOutcomeUnknown) && !answered(err) {
		// A later attempt was refused (or cut) before it could replay the
		// first: that one may still have committed, so not "nothing written".
		err = fmt.Errorf("%w: an attempt's COMMIT went unanswered, and then: %w", ErrOutcomeUnknown, err)
	}
	if err = writeFailed(err); err != nil {
		return Order{}, false, unavailable(fmt.Errorf("create order: %w", err), o.pool)
	}
	return order, replayed, nil
}

func (o *Orders) create(ctx context.Context, tx pgx.Tx, in NewOrder) (Order, bool, error) {
	if in.IdempotencyKey != "" {
		// Serialise requests that share a key, so a retry that arrives while
		// the first attempt is still running waits for it and replays it,
		// instead of racing it for the last items in stock.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, in.IdempotencyKey); err != nil {
			return Order{}, false, err
		}
		if order, found, err := o.replay(ctx, tx, in); err != nil || found {
			return order, found, err
		}
	}
	if in.MaxQuantity > 0 && in.Quantity > in.MaxQuantity {
		return Order{}, false, overCap(ctx, tx, in)
	}
	var price int64
	err := tx.QueryRow(ctx,
		`UPDATE products SET stock = stock - $2 WHERE id = $1 AND stock >= $2 RETURNING price_cents`,
		in.ProductID, in.Quantity).Scan(&price)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)`, in.ProductID).Scan(&exists); err != nil {
			return Order{}, false, err
		}
		if !exists {
			return Order{}, false, fmt.Errorf("product %d: %w", in.ProductID, ErrNotFound)
		}
		return Order{}, false, fmt.Errorf("product %d, quantity %d: %w", in.ProductID, in.Quantity, ErrOutOfStock)
	}
	if err != nil {
		return Order{}, false, err
	}
	if in.Quantity > 0 && price > MaxTotalCents/int64(in.Quantity) {
		// Only with ORDER_MAX_QUANTITY raised far past its default: the
		// product would wrap around int64 (and the stock goes back with
		// the rollback).
		return Order{}, false, fmt.Errorf("product %d: price %d × quantity %d: %w", in.ProductID, price, in.Quantity, ErrTotalOverflow)
	}
	var key, hash *string
	if in.IdempotencyKey != "" {
		h := in.hash()
		key, hash = &in.IdempotencyKey, &h
	}
	order := Order{ProductID: in.ProductID, Quantity: in.Quantity, TotalCents: price * int64(in.Quantity), Token: newOrderToken(in)}
	err = tx.QueryRow(ctx,
		`INSERT INTO orders (product_id, quantity, total_cents, idempotency_key, request_hash, idempotency_scope, token_sha256)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
		order.ProductID, order.Quantity, order.TotalCents, key, hash, in.Scope, tokenHash(order.Token),
	).Scan(&order.ID, &order.CreatedAt)
	return order, false, err
}

// replay finds the order the caller's Idempotency-Key created, with its
// token. found is false when the key is new to this caller; a key first
// used with another body is ErrIdempotencyMismatch.
func (o *Orders) replay(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, in NewOrder) (order Order, found bool, err error) {
	var hash string
	var stored []byte
	err = q.QueryRow(ctx,
		`SELECT id, product_id, quantity, total_cents, created_at, request_hash, token_sha256
		 FROM orders WHERE idempotency_scope = $1 AND idempotency_key = $2`,
		in.Scope, in.IdempotencyKey,
	).Scan(&order.ID, &order.ProductID, &order.Quantity, &order.TotalCents, &order.CreatedAt, &hash, &stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Order{}, false, nil
	case err != nil:
		return Order{}, false, err
	case hash != in.hash():
		return Order{}, false, ErrIdempotencyMismatch
	}
	// The same token as the first answer; an order placed before tokens
	// existed has none to give.
	if token := derivedOrderToken(in.Scope, in.IdempotencyKey); tokenMatches(token, stored) {
		order.Token = token
	}
	return order, true, nil
}

// Get returns order id to the holder of its token. A wrong token and an
// absent order are the same ErrNotFound, so answers tell an attacker
// nothing about which ids exist.
func (o *Orders) Get(ctx context.Context, id int64, token string) (Order, error) {
	if !wellFormed(token) { // no order has it: the same answer, no query
		return Order{}, fmt.Errorf("order %d: %w", id, ErrNotFound)
	}
	var order Order
	var stored []byte
	err := retry(ctx, func() error {
		return o.pool.With(ctx, func(conn db.Conn) error {
			return conn.QueryRow(ctx,
				`SELECT id, product_id, quantity, total_cents, created_at, token_sha256 FROM orders WHERE id = $1`, id,
			).Scan(&order.ID, &order.ProductID, &order.Quantity, &order.TotalCents, &order.CreatedAt, &stored)
		})
	})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !tokenMatches(token, stored)) {
		return Order{}, fmt.Errorf("order %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Order{}, unavailable(fmt.Errorf("get order %d: %w", id, err), o.pool)
	}
	return order, nil
}

// overCap answers an order above the per-order cap without selling
// anything: out of stock where it asks for more than there is (the truer
// answer, and what a client asking for too much has always been told),
// the cap otherwise.
func overCap(ctx context.Context, tx pgx.Tx, in NewOrder) error {
	var stock int64
	err := tx.QueryRow(ctx, `SELECT stock FROM products WHERE id = $1`, in.ProductID).Scan(&stock)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("product %d: %w", in.ProductID, ErrNotFound)
	case err != nil:
		return err
	case stock < int64(in.Quantity):
		return fmt.Errorf("product %d, quantity %d: %w", in.ProductID, in.Quantity, ErrOutOfStock)
	}
	return &QuantityLimitError{Max: in.MaxQuantity}
}
