package middleware

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
)

// Failed authentications cost the client that makes them: each refused or
// missing key counts against its address (IPv6 by /64, ClientKey) in
// AuthConfig.Failures, shared by the fleet; past the limit its writes answer
// 429 with Retry-After before any key is looked at, so a weak static key
// cannot be guessed online and a flood of made-up keys reaches neither the
// key store nor the log (issue 27 rows 4 and 5).

// failureBucket keeps the failure counts apart from the request limits that
// share the store.
const failureBucket = "authfail:"

// blocked answers 429 and reports true when client is past its failure
// limit. A store fault lets the request through: the lookup budgets still
// bound what it can cost.
func (a *Auth) blocked(c *gin.Context, client string) bool {
	if a.cfg.Failures == nil {
		return false
	}
	lctx, err := a.cfg.Failures.Peek(c.Request.Context(), failureBucket+client)
	if err != nil || !lctx.Reached {
		return false
	}
	a.tooManyFailures(c, client, lctx)
	return true
}

// refuse answers a missing or wrong key: 401 with the Bearer challenge
// (RFC 6750), or 429 once this failure passes the client's limit.
func (a *Auth) refuse(c *gin.Context, client, challenge, msg string) {
	if a.cfg.Failures != nil {
		lctx, err := a.cfg.Failures.Get(c.Request.Context(), failureBucket+client)
		if err == nil && lctx.Reached {
			a.tooManyFailures(c, client, lctx)
			return
		}
	}
	c.Header("WWW-Authenticate", challenge)
	Refuse(c, http.StatusUnauthorized, msg, 0)
}

func (a *Auth) tooManyFailures(c *gin.Context, client string, lctx limiter.Context) {
	a.warn.Warn("api key refused: too many failed authentications", "client", clientIP(c))
	h := c.Writer.Header()
	h["X-Ratelimit-Limit"] = []string{strconv.FormatInt(lctx.Limit, 10)}
	h["X-Ratelimit-Remaining"] = []string{"0"}
	wait := retryWait(a.cfg.Failures, failureBucket+client, lctx)
	// Peek's Reset is rounded down; every X-RateLimit-Reset is rounded up.
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(resetSecond(time.Now().Add(wait)), 10)}
	Refuse(c, http.StatusTooManyRequests, "too many failed authentications from this client, retry later", max(wait, time.Second))
}

// tooManyLookups answers a client that spent its own lookup budget: 429
// with the X-RateLimit-* headers every 429 carries (SPEC §3): the budget's
// burst, none left, and the second by which a lookup is free again.
func tooManyLookups(c *gin.Context, err error) {
	burst, wait := 1, time.Second
	var e *clientLookupsError
	if errors.As(err, &e) {
		burst, wait = e.burst, max(e.wait, 0)
	}
	h := c.Writer.Header()
	h["X-Ratelimit-Limit"] = []string{strconv.Itoa(burst)}
	h["X-Ratelimit-Remaining"] = []string{"0"}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(resetSecond(time.Now().Add(wait)), 10)}
	Refuse(c, http.StatusTooManyRequests, "too many unverified API keys from this client, retry later", max(wait, time.Second))
}
