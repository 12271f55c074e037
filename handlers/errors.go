// Package handlers translates HTTP to repository calls and back, and nothing
// else: no SQL, no Redis. It protects the service from its clients' mistakes:
// every malformed input gets a clear 4xx and loses nothing, and every
// infrastructure failure maps to one status in one place (writeError).
package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

// requestError is a client mistake with the status that names it.
type requestError struct {
	status int
	msg    string
	cause  error // logged, never sent: it may name sockets or internals
}

func (e *requestError) Error() string { return e.msg }

func (e *requestError) Unwrap() error { return e.cause }

func badRequest(msg string) error { return &requestError{status: http.StatusBadRequest, msg: msg} }

// unavailableLogsPerSecond bounds the WARN lines of temporary refusals
// (503, 504). Under overload every refused request has one: written whole
// (its error chain as JSON, a write to stderr) they were a tenth of a
// refusal's CPU, so logging made the overload dearer. Every refusal still
// has its access-log line and its count in the request metrics; these
// lines are examples of why, with how many were left out since the last.
const unavailableLogsPerSecond = 10

// errorLog is where writeError logs: internal errors in full, every one;
// refusals sampled.
type errorLog struct {
	log      *slog.Logger
	refusals *middleware.SampledLog
}

func newErrorLog(log *slog.Logger) errorLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return errorLog{log: log, refusals: middleware.NewSampledLog(log, unavailableLogsPerSecond)}
}

// writeError is the one place errors become status codes. Internals are
// logged once here; clients see a short message.
func writeError(c *gin.Context, logs errorLog, err error) {
	var re *requestError
	var capped *repo.QuantityLimitError
	switch {
	case errors.As(err, &re):
		if re.cause != nil {
			logs.log.Info("bad request", "path", c.FullPath(), "request_id", middleware.RequestID(c), "err", re.cause)
		}
		abort(c, re.status, re.msg)
	case errors.As(err, &capped):
		abort(c, http.StatusBadRequest, capped.Error())
	case errors.Is(err, repo.ErrInvalid):
		abort(c, http.StatusBadRequest, "a value in the request is not valid text or is out of range")
	case errors.Is(err, repo.ErrNotFound):
		abort(c, http.StatusNotFound, "not found")
	case errors.Is(err, repo.ErrPreconditionAbsent):
		abort(c, http.StatusPreconditionFailed, "no such product: If-Match asks for a current version, and there is none")
	case errors.Is(err, repo.ErrPreconditionFailed):
		abort(c, http.StatusPreconditionFailed, "the product changed since you read it: If-Match does not name its current ETag; GET it again")
	case errors.Is(err, repo.ErrStockOverflow):
		abort(c, http.StatusBadRequest, fmt.Sprintf("stock_adjustment would take the stock past %d, the most a product can hold", repo.MaxStock))
	case errors.Is(err, repo.ErrTotalOverflow):
		abort(c, http.StatusBadRequest, fmt.Sprintf("quantity × the product's price_cents would pass %d, the largest total an order can hold", int64(repo.MaxTotalCents)))
	case errors.Is(err, repo.ErrOutOfStock):
		abort(c, http.StatusConflict, "not enough stock")
	case errors.Is(err, repo.ErrIdempotencyMismatch):
		abort(c, http.StatusUnprocessableEntity, "Idempotency-Key was already used with a different request body")
	case errors.Is(err, repo.ErrOutcomeUnknown):
		// Not 503: the client (and ours, client/retry.go) retries a 503
		// write, and this one may already be applied. A 504 is retried only
		// where a retry is safe (PUT without stock_adjustment, an order with
		// its Idempotency-Key).
		logs.refusals.Warn("write outcome unknown", "path", c.FullPath(), "request_id", middleware.RequestID(c), "err", err)
		msg := "the database did not confirm the write: it may or may not have been applied; check before sending it again"
		if strings.HasPrefix(c.FullPath(), "/orders") {
			msg += " (an order sent again with the same Idempotency-Key is never placed twice)"
		}
		abort(c, http.StatusGatewayTimeout, msg)
	case errors.Is(err, repo.ErrUnavailable):
		logs.refusals.Warn("unavailable", "path", c.FullPath(), "request_id", middleware.RequestID(c), "err", err)
		middleware.Refuse(c, http.StatusServiceUnavailable, "temporarily unavailable, retry later", repo.RetryAfter(err))
	case errors.Is(err, context.DeadlineExceeded):
		logs.refusals.Warn("request deadline exceeded", "path", c.FullPath(), "request_id", middleware.RequestID(c), "err", err)
		abort(c, http.StatusGatewayTimeout, "the request took too long")
	case errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil:
		// The client went away, and nobody reads this answer; or a
		// shutdown past SHUTDOWN_TIMEOUT cut the request, and the client
		// may send it again, to another instance.
		middleware.Refuse(c, http.StatusServiceUnavailable, "request cancelled: the client left or the server is stopping; retry", time.Second)
	default:
		logs.log.Error("internal error", "path", c.FullPath(), "request_id", middleware.RequestID(c), "err", err)
		abort(c, http.StatusInternalServerError, "internal error")
	}
}

// abort answers a final error: no Retry-After (middleware.Refuse writes
// every error body, here and at the door).
func abort(c *gin.Context, status int, msg string) { middleware.Refuse(c, status, msg, 0) }

func isNotFound(err error) bool { return errors.Is(err, repo.ErrNotFound) }
