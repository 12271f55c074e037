package config

import (
	"math"

	limiter "github.com/ulule/limiter/v3"
)

// AbuseSettings bound what one client of the public API can take: items
// per order, orders per minute, failed authentications per minute
// (docs/security.md).
type AbuseSettings struct {
	// OrderMaxQuantity (ORDER_MAX_QUANTITY) bounds the items of one order,
	// so one request cannot empty a product.
	OrderMaxQuantity int
	// OrderRateLimit (ORDER_RATE_LIMIT) is each client's order budget
	// (per IP, or per API key when a valid one is presented), ulule
	// format, or "off". Unset, it follows RATE_LIMIT: off when the per-IP
	// limit is off (a load test from one machine), else defaultOrderRate.
	OrderRateLimit string
	// AuthFailureLimit (AUTH_FAILURE_LIMIT) bounds refused API keys per
	// client (IP, IPv6 by /64) before its writes answer 429, ulule format,
	// or "off". It does not follow RATE_LIMIT: a load test does not fail
	// authentication, and a guessing attack must stay expensive.
	AuthFailureLimit string
}

// Defaults: ten items an order, an order a second on average per client,
// and twenty refused keys a minute per client.
const (
	defaultOrderMaxQuantity = 10
	defaultOrderRate        = "60-M"
	defaultAuthFailureRate  = "20-M"
)

func readAbuse(p *envParser, rateLimit string) AbuseSettings {
	a := AbuseSettings{
		OrderMaxQuantity: p.atMost("ORDER_MAX_QUANTITY", p.positive("ORDER_MAX_QUANTITY", defaultOrderMaxQuantity), math.MaxInt32),
		AuthFailureLimit: p.str("AUTH_FAILURE_LIMIT", defaultAuthFailureRate),
	}
	def := defaultOrderRate
	if rateLimit == "off" {
		def = "off" // a value the user never set follows the one they did
	}
	a.OrderRateLimit = p.str("ORDER_RATE_LIMIT", def)
	p.rate("ORDER_RATE_LIMIT", a.OrderRateLimit, defaultOrderRate)
	p.rate("AUTH_FAILURE_LIMIT", a.AuthFailureLimit, defaultAuthFailureRate)
	return a
}

// rate checks a ulule/limiter rate or "off". A count of 0 parses (every
// request refused, 429 for all) but is never what was meant: "off" is.
func (p *envParser) rate(name, v, example string) {
	if v == "off" {
		return
	}
	if r, err := limiter.NewRateFromFormatted(v); err != nil || r.Limit < 1 {
		p.fail(name, v, `want "off" or N-S, N-M, N-H, N-D with N ≥ 1 (e.g. `+example+`)`)
	}
}
