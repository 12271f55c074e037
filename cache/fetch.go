package cache

import (
	"context"
	"errors"
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
	ctx, span := c.tracer.Start(ctx, spanFetch, trace.WithAttributes(attrKey.String(key), attrShared.Bool(false)))
	r, err := c.fetch(ctx, key, load)
	endFetch(span, r, err)
	return r, err
}

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
	mark := c.l1.mark()
	e, found, err := c.read(ctx, key)
	if err != nil {
		// Redis is down or slow: losing the cache must not lose the answer,
		// nor cost a load per read while it lasts (outage.go).
		c.warnOutage("cache: redis read failed, loading directly", "key", key, "err", err)
		return c.outageRead(ctx, key, load, now)
	}
	if found {
		return c.serve(ctx, key, e, load, now, mark), nil
	}
	switch c.cfg.Mode {
	case ModeNaive:
		e, err := c.loadDirect(ctx, key, load, true)
		if err != nil {
			return Result{}, err
		}
		return c.result(e, Miss, c.now(), false), nil
	case ModeSingleflight:
		return c.flight(ctx, key, func(lctx context.Context) (Entry, error) {
			return c.loadDirect(lctx, key, load, true)
		})
	}
	return c.flightFor(ctx, key, c.cfg.LockWait+c.holdLimit(), func(lctx context.Context) (Entry, error) {
		return c.loadLocked(lctx, key, load)
	})
}

// serve answers from a Redis entry, starting a background refresh when the
// entry is stale (swr) or XFetch decides to recompute early.
func (c *Cache) serve(ctx context.Context, key string, e Entry, load LoadFunc, now time.Time, mark uint64) Result {
	status := Hit
	switch {
	case c.cfg.Mode == ModeSWR && !now.Before(e.SoftExpiry):
		status = Stale
		c.refresh(ctx, key, e, load)
	case c.cfg.Mode == ModeXFetch && !e.Absent && xfetchEarly(now, e.SoftExpiry, e.Delta, c.cfg.XFetchBeta, randUnit()):
		c.refresh(ctx, key, e, load)
	}
	// A stale value goes to L1 too, so a burst during a refresh costs no
	// Redis round trip per request: the refresh's fill signal evicts it
	// everywhere the moment the new value is stored.
	c.l1.fill(key, e, now, mark)
	return c.result(e, status, now, false)
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

// flight runs fn once per key in this process and shares its outcome. The
// shared load runs under its own deadline, detached from any one caller's
// cancellation: a caller that gives up stops waiting, the others still get
// the value. Close cancels it.
func (c *Cache) flight(ctx context.Context, key string, fn func(context.Context) (Entry, error)) (Result, error) {
	return c.flightFor(ctx, key, c.cfg.LoadTimeout, fn)
}

// flightFor is flight with the shared deadline given: the lock path's covers
// a wait for the lock and then one whole load.
func (c *Cache) flightFor(ctx context.Context, key string, limit time.Duration, fn func(context.Context) (Entry, error)) (Result, error) {
	// singleflight marks every caller's result Shared, the one that ran
	// the load included; only the others waited on someone else's load.
	ranIt := false
	ch := c.group.DoChan(key, func() (any, error) {
		ranIt = true // read by this caller only after the result arrives
		if !c.track() {
			return Entry{}, fmt.Errorf("cache fetch %s: %w", key, errClosed)
		}
		defer c.wg.Done()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
		defer cancel()
		stop := context.AfterFunc(c.life, cancel)
		defer stop()
		return fn(lctx)
	})
	select {
	case r := <-ch:
		if r.Shared && !ranIt {
			c.stats.shared.Add(1)
			markShared(ctx)
		}
		if r.Err != nil {
			return Result{}, r.Err
		}
		return c.result(r.Val.(Entry), Miss, c.now(), false), nil
	case <-ctx.Done():
		return Result{}, fmt.Errorf("cache fetch %s: %w", key, ctx.Err())
	}
}

// loadDirect loads without any Redis lock and, if store is set, caches the
// result unconditionally.
func (c *Cache) loadDirect(ctx context.Context, key string, load LoadFunc, store bool) (Entry, error) {
	mark := c.l1.mark()
	e, ttl, err := c.runLoad(ctx, key, load)
	if err != nil {
		return Entry{}, err
	}
	if store {
		if err := c.write(ctx, key, e, ttl); err != nil {
			c.log.Warn("cache: store after load failed", "key", key, "err", err)
		}
	}
	c.l1.fill(key, e, c.now(), mark)
	return e, nil
}

// loadCapped is the load of last resort, used while Redis is unusable: no
// store, no lock, and at most MaxDirectLoads at once in this instance.
func (c *Cache) loadCapped(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	select {
	case c.direct <- struct{}{}:
		defer func() { <-c.direct }()
	case <-ctx.Done():
		return Entry{}, fmt.Errorf("cache load %s: waiting for a direct-load slot: %w", key, ctx.Err())
	}
	return c.loadDirect(ctx, key, load, false)
}

// runLoad calls load and wraps its answer in an Entry; a LoadFunc error other
// than ErrAbsent comes back as is.
func (c *Cache) runLoad(ctx context.Context, key string, load LoadFunc) (Entry, time.Duration, error) {
	c.stats.loads.Add(1)
	ctx, span := c.tracer.Start(ctx, spanLoad)
	defer span.End()
	start := time.Now()
	v, err := load(ctx)
	delta := time.Since(start)
	absent := errors.Is(err, ErrAbsent)
	if err != nil && !absent {
		c.stats.loadErrors.Add(1)
		return Entry{}, 0, fmt.Errorf("load %s: %w", key, err)
	}
	e, ttl := c.newEntry(key, v, absent, delta)
	return e, ttl, nil
}
