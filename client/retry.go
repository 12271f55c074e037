package client

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds the retries of one call. The zero value of a field
// takes its default; MaxAttempts 1 turns retries off.
//
// This client is the one retry layer between a caller and the API: code
// that uses it must not wrap its calls in another retry loop, or every
// layer multiplies the attempts of the others (3 × 3 = 9 requests per
// call) exactly when the service is least able to take them.
type RetryPolicy struct {
	// MaxAttempts counts the first request too; default 3.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff before retry n (n ≥ 1): a
	// uniform random wait in [0, min(MaxDelay, BaseDelay·2^(n-1))), "full
	// jitter", so a fleet that failed together does not come back
	// together. Defaults 100 ms and 2 s.
	BaseDelay, MaxDelay time.Duration
	// MaxElapsed bounds the whole call, waits included; default 10 s. The
	// caller's context deadline, when sooner, wins.
	MaxElapsed time.Duration
	// AttemptTimeout bounds one request; default 5 s.
	AttemptTimeout time.Duration
}

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts    = 3
	DefaultBaseDelay      = 100 * time.Millisecond
	DefaultMaxDelay       = 2 * time.Second
	DefaultMaxElapsed     = 10 * time.Second
	DefaultAttemptTimeout = 5 * time.Second
)

// NoRetries sends each call once: for probes and for measuring what the
// service answers (the lab).
var NoRetries = RetryPolicy{MaxAttempts: 1}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = DefaultMaxElapsed
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	return p
}

// backoffCap is the upper end of the jitter window before retry n (n ≥ 1).
func (p RetryPolicy) backoffCap(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// delay is how long to wait before retry n: full jitter, and never less
// than the server's Retry-After. With a Retry-After the jitter is added on
// top of it, so callers told "1 s" do not all return in the same
// millisecond.
func (p RetryPolicy) delay(n int, retryAfter time.Duration, rnd func(int64) int64) time.Duration {
	c := p.backoffCap(n)
	jitter := time.Duration(0)
	if c > 0 {
		jitter = time.Duration(rnd(int64(c)))
	}
	return retryAfter + jitter
}

// randN is the default jitter source: uniform in [0, n).
func randN(n int64) int64 { return rand.Int64N(n) } // #nosec G404 -- backoff jitter, not a secret

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3). A date in the past is zero; garbage is zero and
// false.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		// Capped far above any budget so the multiplication cannot overflow.
		return time.Duration(min(s, 1<<31)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// retryableStatus reports whether an answer with status may be retried.
// The service did not act on 408, 429 and 503 (refused at the door: rate
// limit, shedding, open breaker), so even a non-idempotent request may go
// again. 502 and 504 say nothing about whether it acted, so only an
// idempotent request (GET, PUT, an order with its Idempotency-Key) goes
// again. Every other 4xx is the caller's mistake and 500 is a bug: sending
// either again gets the same answer.
func retryableStatus(status int, idempotent bool) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return idempotent
	}
	return false
}

// retryableTransport reports whether a request that got no answer may be
// retried: always when the connection was never made (nothing was sent),
// otherwise only when repeating it is harmless.
func retryableTransport(err error, idempotent bool) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return idempotent
}

// mayHaveActed reports whether one attempt of a write may have been
// applied without the caller hearing so: a 502 or 504, or no answer once
// the request could have been sent (anything but a failed dial).
func mayHaveActed(method string, ans *answer, err error) bool {
	if method == http.MethodGet || method == http.MethodHead {
		return false
	}
	if err != nil {
		var op *net.OpError
		return !errors.As(err, &op) || op.Op != "dial"
	}
	return ans.status == http.StatusBadGateway || ans.status == http.StatusGatewayTimeout
}

// outcome is ErrOutcomeUnknown when unknown, else nil (errors.Join drops it).
func outcome(unknown bool) error {
	if unknown {
		return ErrOutcomeUnknown
	}
	return nil
}
