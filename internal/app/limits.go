package app

import (
	"log/slog"

	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"

	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/middleware"
)

// limits are the per-client budgets, all counted in one store: Redis, so
// the fleet shares each budget, taken in leases, falling back to this
// instance's memory while Redis is away. A nil limiter is a budget that is
// off.
type limits struct {
	ip, key *limiter.Limiter // RATE_LIMIT, RATE_LIMIT_KEY
	orders  *limiter.Limiter // ORDER_RATE_LIMIT: orders per client (IP or key)
	// authFailures counts missing and refused API keys per client
	// (AUTH_FAILURE_LIMIT).
	authFailures *limiter.Limiter
}

// newLimits builds the limiters that are on (every rate was validated by
// config.Load); with all of them off no store is opened.
func newLimits(cfg config.Config, rdb redis.UniversalClient, log *slog.Logger) limits {
	rates := []string{cfg.RateLimit, cfg.RateLimitKey, cfg.Abuse.OrderRateLimit, cfg.Abuse.AuthFailureLimit}
	var store limiter.Store
	for _, r := range rates {
		if r != "off" && store == nil {
			// Leases: one Redis round trip per lease of RATE_LIMIT_LEASE ×
			// the limit, not per request; the fleet still shares one budget.
			store = middleware.NewLeaseStore(newLimitStore(rdb, cfg.Namespace(), log), cfg.RateLimitLease, rateLimitClients).
				WithWindowEnd(limitWindowEnd(rdb, cfg.Namespace()))
		}
	}
	build := func(formatted string) *limiter.Limiter {
		if formatted == "off" {
			return nil
		}
		rate, _ := limiter.NewRateFromFormatted(formatted)
		return limiter.New(store, rate)
	}
	return limits{ip: build(rates[0]), key: build(rates[1]), orders: build(rates[2]), authFailures: build(rates[3])}
}

// orderBucket prefixes the order budget's buckets: they share the store
// (and its lease buckets, which are keyed by bucket name alone) with the
// request limits, and must not share their counts: an address's order
// budget and its request budget are two counters.
const orderBucket = "order:"
