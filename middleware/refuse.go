package middleware

import (
	"errors"
	"fmt"
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
	if bodyUnread(c.Request) {
		// Refused before ReadBody (a missing key, a rate limit): net/http
		// would read the rest of the body before it sends the answer, so a
		// client trickling its body heard nothing until the server's read
		// timeout cut it off (10 s, whatever BODY_READ_TIMEOUT says).
		// Closing after the answer lets the answer go at once.
		c.Header("Connection", "close")
	}
	c.AbortWithStatusJSON(status, gin.H{"error": msg})
}

// bodyUnread reports whether r has a body that no one has read: ReadBody
// replaces a body it has read with a readBody.
func bodyUnread(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return false
	}
	_, read := r.Body.(readBody)
	return !read
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

// OneHeader is a request header that may be given once: a client that
// sends two (two Authorization or Idempotency-Key headers, two
// Content-Types) means one of them, and the service cannot tell which, so
// that is an error for a 400. present is false when the header is absent.
func OneHeader(h http.Header, name string) (v string, present bool, err error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, fmt.Errorf("%s given %d times; give it once", name, len(vs))
}
