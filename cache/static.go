package cache

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// Never-expiring keys (Config.Static) are for config-like values that
// change only when someone writes them: a read never reloads them, so a
// hot one can never stampede. Three things keep them right:
//
//   - every write goes through the usual fenced path (Invalidate, then
//     Reload under the key's lock), which stores them static again;
//   - a repair job (StartRepair) reloads each of them every period under a
//     once-per-period job marker, so one instance of the fleet fixes a
//     value that was lost (Redis restart, eviction) or changed behind the
//     cache's back, and pushes the safety TTL back;
//   - the safety TTL (Config.StaticTTL) drops an entry nobody repairs any
//     more, so a forgotten key cannot be served forever.
//
// Until the repair job runs after a Redis restart, a read of a lost static
// key takes the normal miss path: one load across instances under the lock.

// StartRepair reloads every static key each period for as long as the
// Cache lives; one instance per period does the work, however many run it.
// loader maps a key to its load. Close stops it.
func (c *Cache) StartRepair(name string, period time.Duration, loader func(key string) LoadFunc) {
	if len(c.cfg.Static) > 0 {
		c.everyPeriod(period, func() { c.repairOnce(name, period, loader) })
	}
}

// repairOnce runs one period of the repair job, if no other instance has
// claimed this period, and returns how many keys it found wrong or missing.
func (c *Cache) repairOnce(name string, period time.Duration, loader func(key string) LoadFunc) int {
	ctx, cancel := context.WithTimeout(c.life, period)
	defer cancel()
	if !c.claimPeriod(ctx, name, period) {
		return 0
	}
	repaired := 0
	for _, key := range c.cfg.Static {
		before, found, _ := c.read(ctx, c.named(key))
		var loaded []byte
		load := loader(key)
		err := c.Reload(ctx, key, func(ctx context.Context) ([]byte, error) {
			v, err := load(ctx)
			loaded = v
			return v, err
		})
		switch {
		case errors.Is(err, ErrNotObtained):
			continue // a write or another load of it is storing it now
		case err != nil:
			c.log.Warn("static repair: reload failed", "key", key, "err", err)
			continue
		}
		if !found || !before.Static || !bytes.Equal(before.Value, loaded) {
			repaired++
			c.log.Info("static repair: key restored", "key", key, "was_cached", found)
			// Other instances may hold the old value in L1.
			if err := c.publish(ctx, c.named(key)); err != nil {
				c.log.Warn("static repair: invalidation not published", "key", key, "err", err)
			}
		}
	}
	return repaired
}
