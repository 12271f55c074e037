package middleware

import (
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
	// Peek's Reset is rounded down; the wait is the window's real end.
	wait := retryWait(a.cfg.Failures, failureBucket+client, lctx)
	refuseSpent(c, lctx.Limit, wait, "too many failed authentications from this client, retry later")
}

// tooManyLookups answers a client that spent its own share of key lookups.
func tooManyLookups(c *gin.Context, spent *clientLookupsError) {
	refuseSpent(c, int64(spent.burst), spent.wait, spent.Error()+", retry later")
}

// refuseSpent answers 429 for a budget of limit that has nothing left
// until wait has passed, with the X-RateLimit-* headers every 429 carries
// (SPEC §3): X-RateLimit-Reset is the second by which it has room again,
// rounded up, and Retry-After at least a second.
func refuseSpent(c *gin.Context, limit int64, wait time.Duration, msg string) {
	h := c.Writer.Header()
	h["X-Ratelimit-Limit"] = []string{strconv.FormatInt(limit, 10)}
	h["X-Ratelimit-Remaining"] = []string{"0"}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(resetSecond(time.Now().Add(max(wait, 0))), 10)}
	Refuse(c, http.StatusTooManyRequests, msg, max(wait, time.Second))
}
