package cache

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// refresh reloads key in the background while callers keep getting the
// current value. Within a process single-flight dedupes it; across instances
// the entry's lock does (one try, no waiting: if someone holds it, they are
// already refreshing). seen is the entry that prompted the refresh. The
// goroutine is owned by the Cache: bounded by LoadTimeout, capped by
// MaxRefreshes, and cancelled by Close.
func (c *Cache) refresh(ctx context.Context, key string, seen Entry, load LoadFunc) {
	if until, ok := c.elsewhere.Peek(key); ok && c.now().Before(until) {
		return // another instance holds its lock: it is refreshing it
	}
	// DoChan's result channel is buffered, so dropping it leaks nothing.
	c.group.DoChan("refresh\x00"+key, func() (any, error) {
		select {
		case c.refreshes <- struct{}{}:
			defer func() { <-c.refreshes }()
		default:
			return nil, nil // saturated: a later request will trigger it
		}
		rctx, done, ok := c.owned(ctx, c.cfg.LoadTimeout)
		if !ok {
			return nil, errClosed
		}
		defer done()
		c.refreshOnce(rctx, key, seen, load)
		return nil, nil
	})
}

func (c *Cache) refreshOnce(ctx context.Context, key string, seen Entry, load LoadFunc) {
	lock, current, err := c.obtain(ctx, key)
	if errors.Is(err, ErrNotObtained) {
		// Someone else is already loading it: leave it to them for a
		// while rather than ask Redis again on the next stale read.
		c.elsewhere.Add(key, c.now().Add(c.cfg.RefreshRetry))
		return
	}
	if err != nil {
		c.log.Warn("cache: refresh lock failed", "key", key, "err", err)
		return
	}
	// Double-check against the entry we saw, not against freshness (as
	// loadHolding does): XFetch refreshes entries that are still fresh on
	// purpose, and a freshness check would skip every early refresh. A newer
	// entry means another refresh (here or elsewhere) has just stored it,
	// which is not counted as a refresh of ours.
	if _, newer := c.entry(key, current, func(e Entry) bool { return e.SoftExpiry.After(seen.SoftExpiry) }); newer {
		c.release(key, lock)
		if c.hotCopies(key) {
			c.respread(key) // what we saw was an older copy: bring them up to date
		}
		return
	}
	c.stats.refreshes.Add(1)
	// A failed refresh keeps the stale value in place: it is still the best
	// answer we have, until the hard TTL.
	if _, err := c.storeLoaded(ctx, key, lock, load); err != nil {
		c.log.Warn("cache: background refresh failed", "key", key, "err", err)
	}
}

// newElsewhere bounds the keys remembered as refreshed elsewhere: they are
// the few hot keys stale at one moment, and one forgotten early costs only
// one more lock attempt.
func newElsewhere() *lru.Cache[string, time.Time] {
	l, _ := lru.New[string, time.Time](1024) // errors only for a size ≤ 0
	return l
}

// xfetchEarly is XFetch (Vattani et al., "Optimal Probabilistic Cache
// Stampede Prevention"): recompute when now − delta·beta·ln(r) ≥ expiry,
// r uniform in (0,1]. Since −ln(r) is exponential, the chance is
// exp(−remaining/(delta·beta)): negligible while far from expiry, rising as
// it nears, higher for slow loads, so one early caller refreshes it.
func xfetchEarly(now, expiry time.Time, delta time.Duration, beta, r float64) bool {
	gap := time.Duration(float64(delta) * beta * -math.Log(r))
	return !now.Add(gap).Before(expiry)
}

// randUnit returns a uniform float in (0,1], so ln never sees zero.
func randUnit() float64 { return 1 - rand.Float64() } // #nosec G404 -- XFetch's coin, not a secret

// StartRefreshAhead reloads the given hot keys every period (keep it below
// the soft TTL) for as long as the Cache lives, so they never expire under
// load. A marker key (<namespace>job:<name>:ran, set NX for 90% of a period) lets one
// instance per period do the work, however many run it. Close stops it.
func (c *Cache) StartRefreshAhead(name string, period time.Duration, keys []string, loader func(key string) LoadFunc) {
	if len(keys) > 0 {
		c.everyPeriod(period, func() { c.refreshAheadOnce(name, period, keys, loader) })
	}
}

func (c *Cache) refreshAheadOnce(name string, period time.Duration, keys []string, loader func(key string) LoadFunc) {
	ctx, cancel := context.WithTimeout(c.life, period)
	defer cancel()
	if !c.claimPeriod(ctx, name, period) {
		return
	}
	for _, key := range keys {
		if err := c.Reload(ctx, key, loader(key)); err != nil && !errors.Is(err, ErrNotObtained) {
			c.log.Warn("refresh-ahead: reload failed", "key", key, "err", err)
		}
	}
}

// Reload recomputes key now, even if it is fresh, under the key's lock (one
// try: ErrNotObtained means another load of it is already running), and
// stores the result with a fenced write.
func (c *Cache) Reload(ctx context.Context, key string, load LoadFunc) error {
	key = c.named(key)
	lock, _, err := c.obtain(ctx, key)
	if err != nil {
		return err
	}
	c.stats.refreshes.Add(1)
	_, err = c.storeLoaded(ctx, key, lock, load)
	return err
}
