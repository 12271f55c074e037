package cache

import (
	"context"
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
