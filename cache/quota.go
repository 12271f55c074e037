package cache

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Quota is an allowance of N events per second shared by every instance on
// the same Redis and Namespace: a counter per name and second
// ("<ns>quota:<name>:<unix second>", INCR then EXPIRE in one MULTI), so a
// fleet of any size spends the allowance once, not once per instance. The
// window is the calendar second: at its edge up to 2N events may fall
// within one second's span.
//
// Each instance first spends a limiter of the same rate of its own, which
// no fleet-wide allowance can exceed anyway: a flood costs Redis at most N
// round trips per second per instance, not one per event. When Redis cannot
// count (down, slow, its breaker open), that limiter alone decides: an
// outage neither lifts the bound nor fails the caller, it only widens it to
// N per instance.
type Quota struct {
	c     *Cache
	name  string
	n     int64
	local *rate.Limiter
}

// quotaTimeout bounds the Redis round trip of one Allow, on the request
// path of the event it counts.
const quotaTimeout = 100 * time.Millisecond

// NewQuota returns the fleet-wide quota name of perSecond events per
// second (at least 1).
func (c *Cache) NewQuota(name string, perSecond int) *Quota {
	n := max(perSecond, 1)
	return &Quota{c: c, name: name, n: int64(n), local: rate.NewLimiter(rate.Limit(n), n)}
}

// Allow takes one event from this second's allowance and reports whether
// there was one left.
func (q *Quota) Allow(ctx context.Context) bool {
	if !q.local.Allow() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, quotaTimeout)
	defer cancel()
	key := q.c.cfg.Namespace + "quota:" + q.name + ":" + strconv.FormatInt(q.c.now().Unix(), 10)
	var incr *redis.IntCmd
	_, err := q.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, key)
		p.Expire(ctx, key, 2*time.Second) // outlives its second, then goes
		return nil
	})
	if err != nil {
		q.c.log.Debug("cache: quota counted locally", "quota", q.name, "err", err)
		return true
	}
	return incr.Val() <= q.n
}
