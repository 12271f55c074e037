package middleware

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
)

// RateLimit limits each client to the limiter's rate, answering 429 with
// Retry-After and the X-RateLimit-* headers. The client is gin's ClientIP()
// — which believes X-Forwarded-For only from TRUSTED_PROXIES — with IPv6
// addresses grouped by /64, since one IPv6 client owns a whole /64 and could
// otherwise rotate through fresh buckets. A store failure never panics (the
// trap in ulule's own Gin driver) and never fails the request: the store
// itself fails over (see FailoverStore).
func RateLimit(l *limiter.Limiter, log *slog.Logger, onLimited func(*gin.Context)) gin.HandlerFunc {
	return RateLimitPer(l, nil, log, onLimited)
}

// RateLimitPer is RateLimit with a second budget for API keys: a request
// that an earlier middleware authenticated (KeyID set: Auth.Require or
// Auth.Identify) counts against its key's bucket at perKey's rate,
// wherever it comes from; any other request counts against its address at
// perIP's rate. A nil limiter leaves its kind of client unlimited. Only a
// verified key gets a bucket of its own: counting by whatever key a client
// sends would let it dodge its address's limit with made-up keys.
func RateLimitPer(perIP, perKey *limiter.Limiter, log *slog.Logger, onLimited func(*gin.Context)) gin.HandlerFunc {
	return RateLimitNamed("", perIP, perKey, log, onLimited)
}

// RateLimitNamed is RateLimitPer for a budget of its own (the order
// budget): name prefixes its buckets, so they never share a count with
// another limit in the same store.
func RateLimitNamed(name string, perIP, perKey *limiter.Limiter, log *slog.Logger, onLimited func(*gin.Context)) gin.HandlerFunc {
	return rateLimit(name, perIP, perKey, false, log, onLimited)
}

// RateLimitBeforeAuth counts the address against perIP before a key is
// checked (write routes), so made-up keys spend the sender's own budget
// before they cost a lookup; the class chain's RateLimitPer after it then
// does not count the same request's address again. A request whose key
// believed says this instance already knows (a static key, or one looked up
// lately: no lookup to pay for) is left to the class chain, which counts it
// against its key's budget (RATE_LIMIT_KEY) and not its address's: a
// keyed writer spent the address's budget, and every anonymous read from
// its office with it.
func RateLimitBeforeAuth(perIP *limiter.Limiter, believed func(*gin.Context) bool, log *slog.Logger, onLimited func(*gin.Context)) gin.HandlerFunc {
	count := rateLimit("", perIP, nil, true, log, onLimited)
	return func(c *gin.Context) {
		if believed != nil && believed(c) {
			c.Next()
			return
		}
		count(c)
	}
}

// ipCounted marks a request whose address RateLimitBeforeAuth counted.
const ipCounted = "ratelimit_ip_counted"

func rateLimit(name string, perIP, perKey *limiter.Limiter, first bool, log *slog.Logger, onLimited func(*gin.Context)) gin.HandlerFunc {
	headers := newRateHeaders(perIP, perKey)
	refusal := "rate limit exceeded, retry later"
	if name != "" { // which budget, since the two 429s are otherwise alike
		refusal = "rate limit exceeded (the " + strings.TrimSuffix(name, ":") + " budget), retry later"
	}
	return func(c *gin.Context) {
		l, bucket := perIP, ""
		if id := KeyID(c); id != "" && perKey != nil {
			l, bucket = perKey, name+"key:"+id
		} else if l != nil {
			switch {
			case first:
				c.Set(ipCounted, true)
			case name == "" && c.GetBool(ipCounted):
				c.Next()
				return
			}
			bucket = name + ClientKey(clientIP(c))
		}
		if l == nil {
			c.Next()
			return
		}
		lctx, err := l.Get(c.Request.Context(), bucket)
		if err != nil {
			// Both stores failed (only if the request is already cancelled):
			// let it through rather than turn a limiter fault into an outage.
			log.Warn("rate limit unavailable", "err", err)
			c.Next()
			return
		}
		if h := c.Writer.Header(); lctx.Reached || !leavesFewer(h, lctx.Remaining) {
			headers.set(h, lctx)
		}
		if lctx.Reached {
			wait := retryWait(l, bucket, lctx)
			if onLimited != nil {
				onLimited(c)
			}
			Refuse(c, http.StatusTooManyRequests, refusal, max(wait, time.Second))
			return
		}
		c.Next()
	}
}

// leavesFewer reports whether a limit counted earlier on this request (the
// per-IP limit, before the order budget) left the client no more requests
// than remaining: its X-RateLimit-* headers then stay, since they describe
// the limit that refuses the client first. The order budget's 60 a minute
// hid a per-IP limit one request from its end.
func leavesFewer(h http.Header, remaining int64) bool {
	v := h["X-Ratelimit-Remaining"]
	if len(v) == 0 {
		return false
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	return err == nil && n <= remaining
}

// retryAtStore is a store that knows when a spent budget has room again
// (LeaseStore).
type retryAtStore interface {
	RetryAt(bucket string) (time.Time, bool)
}

// retryWait is how long a refused client must wait for room in its
// budget: until this instance's exhausted lease of it ends (the window's
// end, LeaseStore.RetryAt), else until the latest the window may end:
// ulule's Reset is the second it ends in, rounded down, and no window ends
// later than a period from now. Told less, a client that obeys
// Retry-After is refused again.
func retryWait(l *limiter.Limiter, bucket string, lctx limiter.Context) time.Duration {
	if s, ok := l.Store.(retryAtStore); ok {
		if at, ok := s.RetryAt(bucket); ok {
			return time.Until(at)
		}
	}
	return min(time.Until(time.Unix(lctx.Reset, 0).Add(time.Second)), l.Rate.Period)
}

// ClientKey is the rate-limit bucket of a client address: the address
// itself for IPv4, its /64 network for IPv6.
func ClientKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if addr.Is4() {
		return ip // already the address's only spelling: no copy to make
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	p, _ := addr.Prefix(64)
	return p.String()
}
