package cache

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Status says where a Fetch's answer came from.
type Status int

const (
	// Hit: a fresh value from L1 or Redis. Statuses start at one, so a
	// Result nobody filled in never reads as a hit.
	Hit Status = iota + 1
	// Miss: this request waited for a load (its own or a shared one).
	Miss
	// Stale: a value past its soft expiry, served while it is refreshed.
	Stale
)

func (s Status) String() string {
	switch s {
	case Hit:
		return "HIT"
	case Stale:
		return "STALE"
	}
	return "MISS"
}

// Result is a Fetch's answer.
type Result struct {
	Value  []byte
	Absent bool // a cached or freshly loaded "does not exist"
	Status Status
	L1     bool          // served from the in-process cache
	TTL    time.Duration // freshness left; negative when stale
	// Age is how long ago the value was loaded from the source (the HTTP
	// Age header), derived from the entry's expiry and this cache's TTLs.
	Age time.Duration
}

// Fetch returns the value for key, loading it with load when needed. How many
// loads a cold or expiring key causes depends on the Mode; see the package
// documentation.
func (c *Cache) Fetch(ctx context.Context, key string, load LoadFunc) (Result, error) {
	if c.cfg.TracerProvider == nil {
		// Untraced (the default): even a no-op span costs four allocations
		// per read, a tenth of what an L1 hit allocates.
		return c.fetch(ctx, key, load)
	}
	ctx, span := c.tracer.Start(ctx, spanFetch, trace.WithAttributes(attrKey.String(key), attrShared.Bool(false)))
	r, err := c.fetch(ctx, key, load)
	endFetch(span, r, err)
	return r, err
}

// fetch is the read path: L1, then Redis, then the miss the mode asks for.
func (c *Cache) fetch(ctx context.Context, key string, load LoadFunc) (Result, error) {
	key = c.named(key)
	now := c.now()
	if e, ok := c.l1.get(key, now); ok {
		c.stats.l1Hits.Add(1)
		status := Hit
		if c.cfg.Mode == ModeSWR && !now.Before(e.SoftExpiry) {
			// Stale at memory speed. The refresh is deduplicated (here by
			// single-flight, across instances by the lock); its fill evicts
			// this copy on every instance (signal.go), L1_TTL bounds it if
			// the signal is lost.
			status = Stale
			c.refresh(ctx, key, e, load)
		}
		return c.result(e, status, now, true), nil
	}
	if c.pending.has(key) && c.retryInvalidate(ctx, key) != nil {
		// Redis still holds the entry this instance's write made old, or
		// cannot be reached: the source answers.
		return c.outageRead(ctx, key, load, now)
	}
	// A stale value goes to L1 too, so a burst during a refresh costs no
	// Redis round trip per request: the refresh's fill signal evicts it
	// everywhere the moment the new value is stored.
	e, found, err := c.readFill(key, noHold, func() (Entry, bool, error) { return c.sharedRead(ctx, key) })
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller gave up (or ran out of time): not a Redis outage, and
		// no load for an answer nobody waits for.
		return Result{}, fmt.Errorf("cache fetch %s: %w", key, ctx.Err())
	case err != nil:
		// Redis is down or slow: losing the cache must not lose the answer,
		// nor cost a load per read while it lasts (outage.go).
		c.warnOutage("cache: redis read failed, loading directly", "key", key, "err", err)
		return c.outageRead(ctx, key, load, now)
	case found:
		return c.result(e, c.serve(ctx, key, e, load, now), now, false), nil
	}
	if e, err = c.loadMiss(ctx, key, load); err != nil {
		return Result{}, err
	}
	return c.result(e, Miss, c.now(), false), nil
}

// loadMiss is the mode table: what a miss in Redis costs.
func (c *Cache) loadMiss(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	switch c.cfg.Mode {
	case ModeNaive: // every miss loads
		return c.loadDirect(ctx, key, load)
	case ModeSingleflight: // one load per key per process
		return c.flight(ctx, key, load, c.cfg.LoadTimeout, c.loadDirect)
	}
	// lock, swr, xfetch: one load per key across instances. The shared
	// deadline covers a wait for the lock and then one whole load.
	return c.flight(ctx, key, load, c.cfg.LockWait+c.holdLimit(), c.loadLocked)
}

// serve says how a Redis entry is served, starting a background refresh
// when it is stale (swr) or XFetch decides to recompute early.
func (c *Cache) serve(ctx context.Context, key string, e Entry, load LoadFunc, now time.Time) Status {
	switch {
	case c.cfg.Mode == ModeSWR && !now.Before(e.SoftExpiry):
		c.refresh(ctx, key, e, load)
		return Stale
	case c.cfg.Mode == ModeXFetch && !e.Absent && xfetchEarly(now, e.SoftExpiry, e.Delta, c.cfg.XFetchBeta, randUnit()):
		c.refresh(ctx, key, e, load)
	}
	return Hit
}

func (c *Cache) result(e Entry, s Status, now time.Time, fromL1 bool) Result {
	switch {
	case fromL1:
	case e.Absent:
		c.stats.negatives.Add(1)
	case s == Hit:
		c.stats.hits.Add(1)
	case s == Stale:
		c.stats.stales.Add(1)
	default:
		c.stats.misses.Add(1)
	}
	ttl := e.SoftExpiry.Sub(now)
	life := c.lifetime(e.Absent)
	if e.Static {
		life = c.cfg.StaticTTL
	}
	return Result{Value: e.Value, Absent: e.Absent, Status: s, L1: fromL1, TTL: ttl, Age: max(0, life-ttl)}
}
