package cache

import (
	"context"
	"time"
)

// everyPeriod runs fn each period for as long as the Cache lives, on a
// goroutine the Cache owns (Close stops it and waits). It reports false
// when the Cache is already closed.
func (c *Cache) everyPeriod(period time.Duration, fn func()) bool {
	if !c.track() {
		return false
	}
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-c.life.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return true
}

// claimPeriod reports whether this instance runs job name this period: a
// once-per-period marker (<namespace>job:<name>:ran, SET NX), not a lock. It
// expires a little before the next tick (90 %), so the same or another
// instance can run the next period on time; a lock lasting the whole
// period would still exist at the next tick and make the job skip every
// other run. A Redis error is logged and means "not this time".
func (c *Cache) claimPeriod(ctx context.Context, name string, period time.Duration) bool {
	ok, err := c.rdb.SetNX(ctx, c.cfg.Namespace+"job:"+name+":ran", "1", period*9/10).Result()
	if err != nil {
		c.log.Warn("periodic job: marker failed", "job", name, "err", err)
		return false
	}
	return ok // false: another instance runs it this period
}
