package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// read fetches and decodes key from Redis. ok is false on a miss; a corrupt
// or foreign value is a miss too, logged once per key until it is replaced.
func (c *Cache) read(ctx context.Context, key string) (e Entry, ok bool, err error) {
	return c.readAs(ctx, key, c.readKey(key))
}

// readEntry reads key's entry itself, from its master: never a copy, never
// a replica. The lock path's double-check uses it, where a copy lagging
// behind the entry would cost a second load of a value already stored.
func (c *Cache) readEntry(ctx context.Context, key string) (e Entry, ok bool, err error) {
	return c.readAs(ctx, key, key)
}

// readAs reads key through rk, key itself or one of its copies.
func (c *Cache) readAs(ctx context.Context, key, rk string) (e Entry, ok bool, err error) {
	b, err := c.get(ctx, rk, rk != key)
	if errors.Is(err, redis.Nil) && rk != key {
		// A copy expired (its TTL is jittered shorter), was evicted, or its
		// write failed: the entry itself decides, never the database.
		c.stats.copyMisses.Add(1)
		if b, err = c.rdb.Get(ctx, key).Bytes(); err == nil && c.cfg.Hot != nil {
			c.respread(key) // just promoted (or a copy lost): make them
		}
	}
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache get %s: %w", key, err)
	}
	e, err = c.open(key, b)
	if err != nil {
		c.stats.corrupt.Add(1)
		if _, seen := c.corrupt.LoadOrStore(key, struct{}{}); !seen {
			c.log.Warn("cache: ignoring corrupt value", "key", key, "bytes", len(b), "err", err)
		}
		return Entry{}, false, nil
	}
	return e, true, nil
}

// newEntry wraps a loaded value of key with its freshness facts and returns
// its Redis expiry. The expiry is jittered (TTLJitter) so keys written
// together (a warm-up, a burst of misses) do not all expire together. Where
// the entry is fresh until Redis drops it (absent entries, modes without
// SWR) its freshness ends at the jittered expiry too, so XFetch aims at the
// real one.
func (c *Cache) newEntry(key string, value []byte, absent bool, delta time.Duration) (Entry, time.Duration) {
	if !absent && c.static[key] {
		// Fresh until the safety TTL, which writes and the repair job keep
		// pushing back: no read ever finds it stale or missing.
		return Entry{Value: value, Static: true, SoftExpiry: c.now().Add(c.cfg.StaticTTL), Delta: delta}, c.cfg.StaticTTL
	}
	soft, hard := c.lifetime(absent), c.cfg.TTL
	if absent {
		hard = soft
	}
	if jittered := c.jitter(hard); soft >= hard {
		soft, hard = jittered, jittered
	} else {
		hard = max(jittered, soft+(hard-soft)/2) // keep a stale window
	}
	e := Entry{Value: value, Absent: absent, SoftExpiry: c.now().Add(soft), Delta: delta}
	if absent {
		e.Value = nil // the envelope of an absent entry has no payload
	}
	return e, hard
}

// jitter shortens ttl by a random fraction of at most TTLJitter: a
// configured TTL stays an upper bound.
func (c *Cache) jitter(ttl time.Duration) time.Duration {
	if c.cfg.TTLJitter <= 0 {
		return ttl
	}
	return ttl - time.Duration(rand.Float64()*c.cfg.TTLJitter*float64(ttl)) // #nosec G404 -- expiry jitter, not a secret
}

// lifetime is how long a new entry stays fresh. Without SWR nothing is
// served stale: the entry is fresh until Redis drops it, which is also
// XFetch's expiry.
func (c *Cache) lifetime(absent bool) time.Duration {
	switch {
	case absent:
		return c.cfg.NegativeTTL
	case c.cfg.Mode != ModeSWR:
		return c.cfg.TTL
	}
	return c.cfg.SoftTTL
}

// write stores e unconditionally under key and its copies, revoking any
// in-flight load's lock in the same MULTI (the entry and its lock share a
// hash slot) so that load's fenced write cannot land afterwards with an
// older value.
func (c *Cache) write(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	b := c.seal(key, e)
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, b, ttl)
		p.Del(ctx, c.lockKey(key))
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache set %s: %w", key, err)
	}
	c.corrupt.Delete(key)
	c.writeCopies(ctx, key, b, ttl)
	return nil
}

// writeCopies stores the copies in one pipeline, not MULTI: they sit in
// different slots on purpose. It runs only after the entry itself was
// stored (by a fenced write when a load stored it). Each copy's TTL is cut
// by up to a tenth at random: copies never outlive the entry (a read that
// misses a copy falls back to the entry), and they do not all expire at
// the same instant.
//
// Copies live in other slots than the entry's lock, so no script can fence
// them. Instead the entry is read back afterwards: if a newer Set or an
// Invalidate replaced it meanwhile (their own copies may have landed before
// ours), the copies just written are deleted, and reads fall back to the
// entry instead of serving the older value until the copies' TTL.
//
// A key that is not hot (Config.Hot) gets no copies: its old ones go.
func (c *Cache) writeCopies(ctx context.Context, key string, b []byte, ttl time.Duration) {
	if !c.hotCopies(key) {
		c.dropCopies(ctx, key)
		return
	}
	keys := c.copyKeys(key)
	if len(keys) == 0 {
		return
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			// Each copy expires on its own (TTLJitter), never after the
			// entry: a hot key's copies are not all reloaded at once, and a
			// missing copy falls back to the entry.
			p.Set(ctx, k, b, c.jitter(ttl))
		}
		return nil
	})
	if err != nil {
		c.log.Warn("cache: writing copies failed", "key", key, "err", err)
	}
	cur, err := c.rdb.Get(ctx, key).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		c.log.Warn("cache: checking copies against the entry failed", "key", key, "err", err)
		return
	}
	if bytes.Equal(cur, b) {
		return
	}
	c.stats.copiesRevoked.Add(1)
	// One DEL per key: they are in different slots.
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		c.log.Warn("cache: deleting superseded copies failed", "key", key, "err", err)
	}
}
