package cache

import (
	"context"
	"time"
)

// While Redis is unusable (down, or its breaker open or half-open) Fetch
// loads through single-flight and the per-instance cap, and can store
// nothing in Redis. Such a value goes to L1 as usual and is also held:
// after its L1 TTL it is still served, for up to OutageTTL from its load and
// never past its own freshness, to every read that finds Redis still
// unusable. A read that reaches Redis again ignores the hold: it serves what
// Redis has, or loads under the lock. So an outage of any length, and the
// recovery until the breaker closes again, cost the database one load per
// key per instance instead of one per key per L1 TTL (or per read, for a
// value L1 had already dropped).
//
// The price is freshness, and only during an outage: other instances'
// invalidations travel through Redis and cannot arrive anyway, so a held
// value is at most OutageTTL old instead of L1TTL; this instance's own
// writes still drop it at once.

// held returns key's L1 entry if it was loaded during an outage and its
// hold has not run out, whether or not its L1 TTL has.
func (l *l1) held(key string, now time.Time) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	e, ok := l.lru.Peek(key)
	if !ok || e.hold.IsZero() || now.After(e.hold) {
		return Entry{}, false
	}
	return e.entry, true
}

// outageRead answers a read that found Redis unusable: from a held value
// when there is one, otherwise by a capped, single-flight load whose value
// is held.
func (c *Cache) outageRead(ctx context.Context, key string, load LoadFunc, now time.Time) (Result, error) {
	if e, ok := c.l1.held(key, now); ok {
		c.stats.l1Hits.Add(1)
		c.stats.outageHolds.Add(1)
		return c.result(e, Hit, now, true), nil
	}
	// Single-flight still holds the database to one load per process.
	e, err := c.flight(ctx, key, load, c.cfg.LoadTimeout, c.loadOutage)
	if err != nil {
		return Result{}, err
	}
	return c.result(e, Miss, c.now(), false), nil
}
