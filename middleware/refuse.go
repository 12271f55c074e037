package middleware

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// Refuse is the one way a request is answered with an error, here and in
// handlers: the status, the JSON body {"error": msg}, and — when the refusal
// is temporary (retryAfter > 0) — a Retry-After computed by whatever refused
// the work (a pool's drain time, a bulkhead's hold time, a limiter window, a
// breaker's next probe). It aborts the rest of the chain.
func Refuse(c *gin.Context, status int, msg string, retryAfter time.Duration) {
	if retryAfter > 0 {
		c.Header("Retry-After", RetryAfterSeconds(retryAfter))
	}
	c.AbortWithStatusJSON(status, gin.H{"error": msg})
}

// RetryAfterSeconds renders a Retry-After: whole seconds, rounded up (a
// client told less than the wait would come back too early), at least 1
// ("0" invites an immediate retry).
func RetryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// retryHint is the retry hint an error carries (RetryHint), or def.
func retryHint(err error, def time.Duration) time.Duration {
	var h interface{ RetryHint() time.Duration }
	if errors.As(err, &h) && h.RetryHint() > 0 {
		return h.RetryHint()
	}
	return def
}

// statusUnavailable is the status of every temporary refusal but the rate
// limit's 429.
const statusUnavailable = http.StatusServiceUnavailable
