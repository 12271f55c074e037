// Package repo is the domain boundary the handlers talk to: it owns the SQL,
// the product and order types, the sentinel errors, and the product read
// path (cache → single-flight → lock → database), so a handler cannot
// bypass the protections by accident. It protects the database from
// duplicate work (stampedes, retried orders) and from overselling.
package repo

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// Product is the public read model. Stock is deliberately not part of it:
// it changes on every order and would make every cached entry stale.
type Product struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	PriceCents int64     `json:"price_cents"`
	UpdatedAt  time.Time `json:"updated_at"` // UTC; Last-Modified
}

// ETag is a strong entity tag (RFC 9110 §8.8.3) of p's JSON body: see JSON.
func (p Product) ETag() string {
	_, etag := p.JSON()
	return etag
}

// JSON returns p's response body and its strong entity tag, from one
// encoding. The tag hashes exactly the bytes the body carries, so two equal
// tags mean two byte-identical bodies, and a browser or a CDN may
// revalidate with it whichever instance or cache tier answered.
func (p Product) JSON() (body []byte, etag string) {
	body, _ = json.Marshal(p) // cannot fail: plain fields only
	h := fnv.New64a()
	h.Write(body) // #nosec G104 -- hash.Hash.Write never returns an error
	return body, `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}

// Matches reports whether an If-Match list (already split, "*" meaning any
// current representation) names p's ETag. The comparison is strong: a weak
// tag (W/"...") never matches, as RFC 9110 §13.1.1 requires for If-Match.
func (p Product) Matches(tags []string) bool {
	return slices.Contains(tags, "*") || slices.Contains(tags, p.ETag())
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
	// An update never sets stock outright: stock is not part of the ETag
	// (it changes with every order), so an absolute value read before an
	// order would silently undo that order's decrement. A relative
	// adjustment commutes with orders and loses none. Stock below zero is
	// ErrOutOfStock and changes nothing.
	StockDelta *int32
	// IfMatch, when not nil, is the request's If-Match list: the update
	// happens only if the product's current ETag is in it (or it holds
	// "*"), else ErrPreconditionFailed and nothing changes.
	IfMatch []string
}

// Page is one page of a keyset-paginated list.
type Page struct {
	Items []Product `json:"items"`
	// NextAfter is the id to pass as `after` for the next page; nil on the
	// last page.
	NextAfter *int64 `json:"next_after"`
}

// Sentinel errors; handlers map them to HTTP status codes in one place.
var (
	ErrNotFound   = errors.New("not found")
	ErrOutOfStock = errors.New("not enough stock")
	// ErrInvalid: the database rejected a value of the request (a NUL byte,
	// invalid encoding, out of range), which handlers should have caught.
	ErrInvalid = errors.New("invalid value")
	// ErrPreconditionFailed: If-Match did not name the current version;
	// someone else changed the product since the caller read it.
	ErrPreconditionFailed = errors.New("precondition failed")
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
