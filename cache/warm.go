package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/time/rate"
)

// Warm loads the given keys before an instance takes traffic, so a deploy
// does not start with an empty cache in front of the database. It goes a
// batch at a time at no more than perSecond loads, with jitter between
// batches so instances that start together spread their loads; keys already
// cached cost one Redis read, and the lock path makes instances warming the
// same key share one load. It returns how many keys it fetched.
func (c *Cache) Warm(ctx context.Context, keys []string, loader func(key string) LoadFunc, perSecond float64, batch int) (int, error) {
	if batch < 1 {
		batch = 1
	}
	lim := rate.NewLimiter(rate.Limit(perSecond), batch)
	warmed := 0
	for start := 0; start < len(keys); start += batch {
		end := min(start+batch, len(keys))
		if err := lim.WaitN(ctx, end-start); err != nil {
			return warmed, fmt.Errorf("warm: %w", err)
		}
		for _, key := range keys[start:end] {
			if _, err := c.Fetch(ctx, key, loader(key)); err != nil {
				if ctx.Err() != nil {
					return warmed, fmt.Errorf("warm: %w", ctx.Err())
				}
				c.log.Warn("warm: key not loaded", "key", key, "err", err)
				continue
			}
			warmed++
		}
		jitter := time.Duration(rand.Int64N(int64(20 * time.Millisecond))) // #nosec G404 -- pacing jitter, not a secret
		select {
		case <-ctx.Done():
			return warmed, fmt.Errorf("warm: %w", ctx.Err())
		case <-time.After(jitter):
		}
	}
	return warmed, nil
}

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
	lock, err := c.obtain(ctx, key)
	if err != nil {
		return err
	}
	c.stats.refreshes.Add(1)
	_, err = c.storeLoaded(ctx, key, lock, load)
	return err
}
