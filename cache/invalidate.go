package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Set stores value under key, revokes any in-flight load's lock so its
// older value cannot land afterwards, and tells every instance to drop its
// L1 copy. It is last-writer-wins: when a key has concurrent writers, the
// older value's Set may land last. For those, Invalidate then Reload (the
// reload reads the source of truth under the key's lock, fenced by any
// later invalidation) cannot go back in time.
func (c *Cache) Set(ctx context.Context, key string, value []byte) error {
	defer c.wrote()()
	key = c.named(key)
	e, ttl := c.newEntry(key, value, false, 0)
	if err := c.write(ctx, key, e, ttl); err != nil {
		c.l1.remove(key)
		c.invalidateLater(key) // the value it replaces must not outlive it
		return err
	}
	c.pending.done(key)
	c.l1.set(key, e, c.now())
	return c.publish(ctx, key)
}

// wrote moves the write count on before a write and again after it (call
// the function it returns when the write is done), so a read sharing a
// Redis GET (sharedRead) never spans a write: one that started before it
// or during it is never joined by one that starts after it returned.
func (c *Cache) wrote() func() {
	c.writes.Add(1)
	return func() { c.writes.Add(1) }
}

// Invalidate deletes key everywhere: Redis (entry, copies, and the lock of a
// load in flight) and every instance's L1. When Redis does not take it, it
// is tried again until it does (pending.go), and this instance never
// serves key from Redis meanwhile.
func (c *Cache) Invalidate(ctx context.Context, key string) error {
	key = c.named(key)
	if err := c.invalidate(ctx, key); err != nil {
		c.invalidateLater(key)
		return err
	}
	c.pending.done(key)
	return nil
}

// invalidate is Invalidate of a namespaced key, once.
func (c *Cache) invalidate(ctx context.Context, key string) error {
	defer c.wrote()()
	c.l1.remove(key)
	keys := append([]string{key, c.lockKey(key)}, c.copyKeys(key)...)
	// One DEL per key: copies live in other slots, which a multi-key DEL
	// would reject on Redis Cluster.
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache invalidate %s: %w", key, err)
	}
	return c.publish(ctx, key)
}

// publish announces that key changed; every instance (this one included)
// drops its L1 entry when the message arrives. With tracking, Redis itself
// announces every change, so there is nothing to publish.
func (c *Cache) publish(ctx context.Context, key string) error {
	if c.cfg.L1TTL <= 0 || c.cfg.Tracking != nil {
		return nil
	}
	if err := c.rdb.Publish(ctx, c.cfg.Channel, key).Err(); err != nil {
		return fmt.Errorf("cache publish %s: %w", key, err)
	}
	return nil
}

// subscribe joins channel on rdb and waits (briefly) for Redis to confirm,
// so a write made right after New returns is not missed. With Redis down it
// gives up waiting; go-redis keeps retrying in the background. Both kinds
// of invalidation (pub/sub, tracking) start this way.
func (c *Cache) subscribe(ctx context.Context, rdb redis.UniversalClient, channel string) *redis.PubSub {
	sub := rdb.Subscribe(c.life, channel)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := sub.Receive(rctx); err != nil {
		c.log.Warn("cache: invalidation channel not confirmed yet", "channel", channel, "err", err)
	}
	return sub
}

// listen drops L1 entries named on the invalidation channel until Close.
// go-redis resubscribes by itself after a reconnect; messages published while
// disconnected are lost, which L1's short TTL bounds.
func (c *Cache) listen(sub *redis.PubSub) {
	c.consume(sub, func(m *redis.Message) {
		c.l1.remove(m.Payload)
		c.stats.l1Invalidations.Add(1)
	})
}

// consume hands every message of sub to handle until Close, then closes
// sub: the one loop of the invalidation and fill listeners. It owns one
// count of c.wg.
func (c *Cache) consume(sub *redis.PubSub, handle func(*redis.Message)) {
	defer c.wg.Done()
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-c.life.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			handle(m)
		}
	}
}
