package cache

import "context"

// Peek returns key's value when L1 or Redis holds it, and never loads: no
// lock, no query, no refresh. It is for a read that must not reach the
// source, yet must not call "absent" a value the cache holds (repo's
// unknown-id filter, past its lookup budget, while a product created on
// another instance moments ago is already in Redis). found is false when
// neither holds the key; err is Redis's.
func (c *Cache) Peek(ctx context.Context, key string) (r Result, found bool, err error) {
	key = c.named(key)
	now := c.now()
	e, fromL1 := c.l1.get(key, now)
	if fromL1 {
		c.stats.l1Hits.Add(1)
	} else {
		// The entry in Redis may be one this instance's write made old.
		if c.pending.has(key) {
			if err := c.retryInvalidate(ctx, key); err != nil {
				return Result{}, false, err
			}
		}
		if e, found, err = c.readFill(key, noHold, func() (Entry, bool, error) { return c.sharedRead(ctx, key) }); !found || err != nil {
			return Result{}, false, err
		}
	}
	status := Hit
	if !now.Before(e.SoftExpiry) {
		status = Stale // as a stale read is served, but nobody refreshes it here
	}
	return c.result(e, status, now, fromL1), true, nil
}
