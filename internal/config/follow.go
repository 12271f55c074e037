package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	limiter "github.com/ulule/limiter/v3"
)

// Settings whose default follows another setting, so that changing one
// value never leaves an unset neighbour contradicting it. Each rule keeps
// the documented default when nothing it follows was changed.
const (
	defaultNegativeTTL  = 30 * time.Second
	defaultShutdown     = 10 * time.Second
	defaultStaticRepair = time.Minute
	// minStaticRepair floors STATIC_REPAIR_PERIOD: at 1 ns a repair job
	// spun a core, and a 1 ns STATIC_TTL halved to a 0 period crashed the
	// instance after it was ready (a ticker of 0).
	minStaticRepair = time.Second
	// An API key's budget is this many times an address's: a key names one
	// caller, an address may be a whole office behind one NAT.
	keyRateFactor = 10
)

// followers reads the settings that follow others: it runs after the time
// budget and the TTLs are derived.
func (c *Config) followers(p *envParser) {
	// A "not found" never outlives a found value: CACHE_TTL=10s alone
	// kept 404s three times as long as products.
	c.CacheNegTTL = atLeast(p, "CACHE_NEGATIVE_TTL", p.duration("CACHE_NEGATIVE_TTL", min(defaultNegativeTTL, c.CacheTTL)), minEntryTTL, entryTTLWhy)
	if c.CacheNegTTL > c.CacheTTL {
		p.errs = append(p.errs, fmt.Errorf("config: CACHE_NEGATIVE_TTL=%s must be at most CACHE_TTL=%s (%s): a \"not found\" must not outlive a found value; change one of them",
			c.CacheNegTTL, c.CacheTTL, setOrDerived(p.set("CACHE_TTL"))))
	}
	// A graceful shutdown waits for requests that are still within their
	// deadline: REQUEST_TIMEOUT=30s alone was cut at 10 s.
	c.ShutdownTimeout = p.duration("SHUTDOWN_TIMEOUT", max(defaultShutdown, c.RequestTimeout))
	// Static keys are repaired at least twice in their TTL, whichever of
	// the two was set: STATIC_TTL=1m alone was refused against a repair
	// period nobody had set, STATIC_REPAIR_PERIOD=48h against the TTL.
	c.StaticTTL = atLeast(p, "STATIC_TTL", c.StaticTTL, 2*minStaticRepair, "static keys are repaired at least twice in it, at most once a second")
	c.StaticRepair = atLeast(p, "STATIC_REPAIR_PERIOD", p.duration("STATIC_REPAIR_PERIOD", min(defaultStaticRepair, c.StaticTTL/2)),
		minStaticRepair, "each run reloads every static key")
	if !p.set("STATIC_TTL") && p.set("STATIC_REPAIR_PERIOD") {
		c.StaticTTL = max(c.StaticTTL, 2*c.StaticRepair)
	}
	c.RateLimitKey = p.str("RATE_LIMIT_KEY", keyRate(c.RateLimit))
}

// keyRate is RATE_LIMIT_KEY's default: off when the per-IP limit is off
// (a load test from one machine), else keyRateFactor times the per-IP
// limit over the same period (100-S gives the documented 1000-S). A
// malformed RATE_LIMIT is reported on its own; the key limit then keeps
// its documented default.
func keyRate(ipRate string) string {
	if ipRate == "off" {
		return "off"
	}
	n, period, ok := strings.Cut(ipRate, "-")
	limit, err := strconv.ParseInt(n, 10, 64)
	if _, perr := limiter.NewRateFromFormatted(ipRate); !ok || err != nil || perr != nil || limit < 1 {
		return "1000-S" // not "1000-X": one error, for the variable that was set
	}
	return fmt.Sprintf("%d-%s", min(limit, math.MaxInt64/keyRateFactor)*keyRateFactor, period)
}
