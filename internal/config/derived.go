package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// minSigningKey is the shortest CACHE_SIGNING_KEY accepted: HMAC-SHA256's
// own block of security, 32 bytes (`openssl rand -hex 32` gives 64).
const minSigningKey = 32

// signingKey reads CACHE_SIGNING_KEY. A mistake is reported by length
// only: the value is a secret and must not reach a log.
func signingKey(p *envParser) []byte {
	k := p.getenv("CACHE_SIGNING_KEY")
	if k == "" {
		return nil
	}
	switch {
	case strings.TrimSpace(k) != k:
		p.errs = append(p.errs, errors.New("config: CACHE_SIGNING_KEY has surrounding spaces: remove them (every instance must use the same bytes)"))
		return nil
	case len(k) < minSigningKey:
		p.errs = append(p.errs, fmt.Errorf("config: CACHE_SIGNING_KEY is %d bytes, want at least %d (e.g. openssl rand -hex 32)", len(k), minSigningKey))
		return nil
	}
	return []byte(k)
}

// outageTTL is L1_OUTAGE_TTL as cache.Config.OutageTTL, where 0 is the
// default and a negative value turns holding off.
func (c Config) OutageTTL() time.Duration {
	if c.L1OutageTTL == 0 {
		return -1
	}
	return c.L1OutageTTL
}

// namespace is CACHE_NAMESPACE as a key prefix ("ns:"), or "".
func (c Config) Namespace() string {
	if c.CacheNamespace == "" {
		return ""
	}
	return c.CacheNamespace + ":"
}

// invalidationChannel is the L1 invalidation channel. Pub/sub ignores the
// logical database, so without a namespace the channel carries it: apps on
// databases 12 and 13 of one server never evict each other's L1.
func (c Config) InvalidationChannel() string {
	if c.CacheNamespace != "" {
		return c.Namespace() + "cache:invalidate"
	}
	return fmt.Sprintf("cache:invalidate:db%d", c.RedisDB)
}

// breakerOpen reads the breakers' probe schedule: the first probe after
// BREAKER_OPEN_MIN, doubling up to BREAKER_OPEN_MAX. Whichever of the two
// is unset follows the other: an unset minimum above a set cap comes
// down to it, an unset cap below a set minimum rises to it (then every
// probe waits the minimum).
func breakerOpen(p *envParser) (minOpen, maxOpen time.Duration) {
	minOpen = p.duration("BREAKER_OPEN_MIN", 375*time.Millisecond)
	maxOpen = p.duration("BREAKER_OPEN_MAX", 30*time.Second)
	if minOpen > maxOpen {
		switch {
		case !p.set("BREAKER_OPEN_MIN"):
			minOpen = maxOpen
		case !p.set("BREAKER_OPEN_MAX"):
			maxOpen = minOpen
		default:
			p.fail("BREAKER_OPEN_MIN", p.getenv("BREAKER_OPEN_MIN"), fmt.Sprintf("must not exceed BREAKER_OPEN_MAX (%s)", maxOpen))
			minOpen = maxOpen
		}
	}
	return minOpen, maxOpen
}

// fillChannel carries the lock holders' fill signals (cache/signal.go),
// kept apart per logical database or namespace like invalidationChannel.
func (c Config) FillChannel() string {
	if c.CacheNamespace != "" {
		return c.Namespace() + "cache:filled"
	}
	return fmt.Sprintf("cache:filled:db%d", c.RedisDB)
}
