package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// read fetches and decodes key from Redis. ok is false on a miss; a corrupt
// or foreign value is a miss too, logged once per key until it is replaced.
func (c *Cache) read(ctx context.Context, key string) (e Entry, ok bool, err error) {
	b, err := c.rdb.Get(ctx, c.readKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache get %s: %w", key, err)
	}
	e, err = decodeEntry(b)
	if err != nil {
		c.stats.corrupt.Add(1)
		if _, seen := c.corrupt.LoadOrStore(key, struct{}{}); !seen {
			c.log.Warn("cache: ignoring corrupt value", "key", key, "bytes", len(b))
		}
		return Entry{}, false, nil
	}
	return e, true, nil
}

// newEntry wraps a loaded value of key with its freshness facts.
func (c *Cache) newEntry(key string, value []byte, absent bool, delta time.Duration) (Entry, time.Duration) {
	if !absent && c.static[key] {
		// Fresh until the safety TTL, which writes and the repair job keep
		// pushing back: no read ever finds it stale or missing.
		return Entry{Value: value, Static: true, SoftExpiry: c.now().Add(c.cfg.StaticTTL), Delta: delta}, c.cfg.StaticTTL
	}
	soft := c.lifetime(absent)
	e := Entry{Value: value, Absent: absent, SoftExpiry: c.now().Add(soft), Delta: delta}
	if absent {
		e.Value = nil // the envelope of an absent entry has no payload
		return e, soft
	}
	return e, c.cfg.TTL
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
	b := e.encode()
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, b, ttl)
		p.Del(ctx, lockKey(key))
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
// different slots on purpose.
func (c *Cache) writeCopies(ctx context.Context, key string, b []byte, ttl time.Duration) {
	if c.cfg.Copies <= 1 {
		return
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n := 1; n < c.cfg.Copies; n++ {
			p.Set(ctx, copyKey(key, n), b, ttl)
		}
		return nil
	})
	if err != nil {
		c.log.Warn("cache: writing copies failed", "key", key, "err", err)
	}
}
