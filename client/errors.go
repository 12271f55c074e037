package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinels for the answers a caller usually branches on. Match them with
// errors.Is; the *APIError behind them (errors.As) has the details.
var (
	// ErrNotFound: 404, the product or order does not exist.
	ErrNotFound = errors.New("not found")
	// ErrOutOfStock: 409 from POST /orders, not enough stock. Never retried.
	ErrOutOfStock = errors.New("out of stock")
	// ErrUnauthorized: 401, a write without a valid API key (WithAPIKey).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrRateLimited: 429, this caller exceeded its rate limit; RetryAfter
	// says when the limit resets.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: 503, the service shed the request or its database is
	// down; RetryAfter says when to come back. Nothing was written.
	ErrUnavailable = errors.New("unavailable")
	// ErrOutcomeUnknown: a write may or may not have been applied: an
	// attempt got a 502 or 504, or no answer once sent. Read it back before
	// sending it again. It also marks a later answer of the same call (a
	// 412 from If-Match is then usually the write's own first attempt).
	ErrOutcomeUnknown = errors.New("outcome unknown")
)

// APIError is an answer outside 2xx, after any retries.
type APIError struct {
	Method, Path string
	// Status is the HTTP status code.
	Status int
	// Message is the "error" field of the {"error": "..."} body, or the
	// status text when the body is not that shape.
	Message string
	// RetryAfter is the parsed Retry-After header (seconds or HTTP-date),
	// zero when absent.
	RetryAfter time.Duration
	// Header holds the answer's headers (X-Cache, X-RateLimit-*, …).
	Header http.Header
	// Attempts is how many requests the call sent, retries included.
	Attempts int
	// OutcomeUnknown: this write, or an earlier attempt of it, may have
	// been applied although this answer says otherwise (ErrOutcomeUnknown).
	OutcomeUnknown bool

	body []byte
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.OutcomeUnknown {
		s += " (outcome unknown: an attempt may have been applied)"
	}
	return s
}

// Is lets errors.Is(err, ErrNotFound) and friends match by status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrOutOfStock:
		return e.Status == http.StatusConflict
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable
	case ErrOutcomeUnknown:
		return e.OutcomeUnknown
	}
	return false
}

// RetryAfter returns the Retry-After an error carries, zero if none: what
// a caller that gives up now should tell its own caller.
func RetryAfter(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.RetryAfter
	}
	return 0
}
