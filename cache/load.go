package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stampede-guard/api/cache/internal/redislock"
)

// Every way a miss is loaded: shared in this process (flight), stored
// unconditionally (loadDirect), capped and unstored while Redis is unusable
// (loadCapped, loadOutage), and under the key's Redis lock (loadHolding and
// storeLoaded, reached through the wait in lockpath.go). All of them call
// the LoadFunc through runLoad.

// loadVia is one of the loads below, as the mode table (fetch.go) picks it.
type loadVia func(ctx context.Context, key string, load LoadFunc) (Entry, error)

// flight runs via once per key in this process and shares its outcome. The
// shared load is owned by the Cache: detached from any one caller's
// cancellation (a caller that gives up stops waiting, the others still get
// the value), under its own deadline limit, and cancelled by Close.
func (c *Cache) flight(ctx context.Context, key string, load LoadFunc, limit time.Duration, via loadVia) (Entry, error) {
	// singleflight marks every caller's result Shared, the one that ran
	// the load included; only the others waited on someone else's load.
	ranIt := false
	ch := c.group.DoChan(key, func() (any, error) {
		ranIt = true // read by this caller only after the result arrives
		actx := ctx
		if c.cfg.Admit != nil {
			var release func()
			var err error
			if actx, release, err = c.cfg.Admit(ctx); err != nil {
				return Entry{}, fmt.Errorf("cache load %s: %w", key, err)
			}
			defer release()
			actx = context.WithValue(actx, admittedKey{}, release)
		}
		lctx, done, ok := c.owned(actx, limit)
		if !ok {
			return Entry{}, fmt.Errorf("cache fetch %s: %w", key, errClosed)
		}
		defer done()
		return via(lctx, key, load)
	})
	select {
	case r := <-ch:
		if r.Shared && !ranIt {
			c.stats.shared.Add(1)
			markShared(ctx)
		}
		if r.Err != nil {
			return Entry{}, r.Err
		}
		return r.Val.(Entry), nil
	case <-ctx.Done():
		return Entry{}, fmt.Errorf("cache fetch %s: %w", key, ctx.Err())
	}
}

// admittedKey holds a load's Admit release (Config.Admit), for the lock
// path to give its place back when another instance loads instead.
type admittedKey struct{}

// letGo gives back ctx's place at the source, if Admit took one.
func letGo(ctx context.Context) {
	if release, ok := ctx.Value(admittedKey{}).(func()); ok {
		release()
	}
}

// loadDirect loads without any Redis lock and stores the result
// unconditionally.
func (c *Cache) loadDirect(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	e, _, err := c.readFill(key, noHold, func() (Entry, bool, error) {
		e, ttl, err := c.runLoad(ctx, key, load)
		if err != nil {
			return Entry{}, false, err
		}
		if err := c.write(ctx, key, e, ttl); err != nil {
			c.log.Warn("cache: store after load failed", "key", key, "err", err)
		}
		return e, true, nil
	})
	return e, err
}

// loadCapped is the load of last resort, used while the lock tier is
// unusable: no store, no lock, and at most MaxDirectLoads at once in this
// instance.
func (c *Cache) loadCapped(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	return c.loadUnstored(ctx, key, load, noHold)
}

// loadOutage is loadCapped for a read that found Redis unusable: its value
// is also held in L1 for OutageTTL (outage.go).
func (c *Cache) loadOutage(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	return c.loadUnstored(ctx, key, load, c.cfg.OutageTTL)
}

// loadUnstored loads through the per-instance cap on direct loads and puts
// the value in L1 only, held there for hold (noHold: not held).
func (c *Cache) loadUnstored(ctx context.Context, key string, load LoadFunc, hold time.Duration) (Entry, error) {
	select {
	case c.direct <- struct{}{}:
		defer func() { <-c.direct }()
	case <-ctx.Done():
		return Entry{}, fmt.Errorf("cache load %s: waiting for a direct-load slot: %w", key, ctx.Err())
	}
	e, _, err := c.readFill(key, hold, func() (Entry, bool, error) {
		e, _, err := c.runLoad(ctx, key, load)
		return e, err == nil, err
	})
	return e, err
}

// loadHolding runs while we hold lock: double-check, load, fenced store.
func (c *Cache) loadHolding(ctx context.Context, key string, lock *redislock.Lock, seen look, load LoadFunc) (Entry, error) {
	// The load's deadline starts now, not when this caller began waiting:
	// a waiter that took over a dead holder's lock gets a whole load, and
	// never less than other instances' waiters wait for it.
	ctx, cancel := context.WithTimeout(ctx, c.holdLimit())
	defer cancel()
	// Double-check: the previous holder may have stored the value between our
	// miss and our lock. The lock attempt read it (obtain).
	e, fresh := c.entry(key, seen, func(e Entry) bool { return c.now().Before(e.SoftExpiry) })
	if fresh {
		markShared(ctx) // another holder's load, found on the double-check
		c.release(key, lock)
		return e, nil
	}
	return c.storeLoaded(ctx, key, lock, load)
}

// storeLoaded loads while holding lock (extended by the watchdog) and ends
// with a fenced write that also releases it.
func (c *Cache) storeLoaded(ctx context.Context, key string, lock *redislock.Lock, load LoadFunc) (Entry, error) {
	e, _, err := c.readFill(key, noHold, func() (Entry, bool, error) {
		stopWatch := func() int { return 0 }
		if c.cfg.Watchdog == WatchdogOn {
			stopWatch = lock.Watch(ctx)
		}
		e, ttl, err := c.runLoad(ctx, key, load)
		c.stats.extensions.Add(int64(stopWatch()))
		if err != nil {
			c.release(key, lock)
			return Entry{}, false, err
		}
		c.storeFenced(ctx, key, lock, e, ttl)
		return e, true, nil
	})
	return e, err
}

// release frees the lock on a context of its own, so a cancelled load still
// unlocks at once instead of leaving waiters until the TTL.
func (c *Cache) release(key string, lock *redislock.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := lock.Release(ctx); err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
		c.log.Warn("cache: unlock failed", "key", lock.Key(), "err", err)
		return
	}
	c.signal(ctx, key, time.Time{}, 0) // waiters elsewhere may take the lock now
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
