// Package repo is the domain boundary the handlers talk to: it owns the SQL,
// the product and order types, the sentinel errors, and the product read
// path (cache → single-flight → lock → database), so a handler cannot
// bypass the protections by accident. It protects the database from
// duplicate work (stampedes, retried orders) and from overselling.
package repo

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Product is the public read model. Stock is deliberately not part of it:
// it changes on every order and would make every cached entry stale.
type Product struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	// UpdatedAt (UTC) is the product's version: every update moves it
	// strictly forward (Update), and the cache refuses an entry older than
	// one it has seen (EntryVersion).
	UpdatedAt time.Time `json:"updated_at"`
}

// NewProduct is the input of Create.
type NewProduct struct {
	Name       string
	PriceCents int64
	Stock      int32
}

// ProductUpdate is the input of Update.
type ProductUpdate struct {
	Name       string
	PriceCents int64
	// StockDelta, when not nil, is added to the stock (negative removes).
	// An update never sets stock outright: stock is not part of Product
	// (it changes with every order), so an absolute value read before an
	// order would silently undo that order's decrement. A relative
	// adjustment commutes with orders and loses none. Stock below zero is
	// ErrOutOfStock and changes nothing.
	StockDelta *int32
	// Precondition, when not nil, makes the update conditional: it is
	// called with the product as it is now, its row locked, and the update
	// happens only if it returns true; else (or when the product does not
	// exist) ErrPreconditionFailed and nothing changes. The handlers'
	// If-Match compares the current product's ETag with the request's; the
	// row lock means of two editors holding the same version exactly one
	// wins. It runs inside the transaction: quick, and no I/O.
	Precondition func(current Product) bool
}

// Page is one page of a keyset-paginated list.
type Page struct {
	Items []Product `json:"items"`
	// NextAfter is the id to pass as `after` for the next page; nil on the
	// last page.
	NextAfter *int64 `json:"next_after"`
}

// MaxStock is the most a product can hold (its stock column is an integer).
const MaxStock = math.MaxInt32

// MaxTotalCents is the largest total an order can hold (a bigint).
const MaxTotalCents = math.MaxInt64

// Sentinel errors; handlers map them to HTTP status codes in one place.
var (
	ErrNotFound   = errors.New("not found")
	ErrOutOfStock = errors.New("not enough stock")
	// ErrStockOverflow: a stock adjustment would take the stock past the
	// largest count a product can hold (MaxStock).
	ErrStockOverflow = errors.New("stock would pass its maximum")
	// ErrTotalOverflow: an order's total (price × quantity) would pass the
	// largest amount an order can hold (MaxTotalCents).
	ErrTotalOverflow = errors.New("order total would pass its maximum")
	// ErrInvalid: the database rejected a value of the request (a NUL byte,
	// invalid encoding, out of range), which handlers should have caught.
	ErrInvalid = errors.New("invalid value")
	// ErrPreconditionFailed: the update's Precondition refused the current
	// version; someone else changed the product since the caller read it.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrPreconditionAbsent is ErrPreconditionFailed for a product that
	// does not exist: If-Match asks for a current one.
	ErrPreconditionAbsent = fmt.Errorf("product absent: %w", ErrPreconditionFailed)
	// ErrIdempotencyMismatch: the Idempotency-Key was first used with a
	// different request body.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrUnavailable: the database or the cache is saturated or down; the
	// caller should retry later (see RetryAfter).
	ErrUnavailable = errors.New("temporarily unavailable")
)

// UnavailableError is an ErrUnavailable that knows when a retry makes sense.
type UnavailableError struct {
	RetryAfter time.Duration
	Cause      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: %v", ErrUnavailable, e.Cause)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

// RetryAfter is the retry hint carried by err, or 1 second.
func RetryAfter(err error) time.Duration {
	var ue *UnavailableError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		return ue.RetryAfter
	}
	return time.Second
}
