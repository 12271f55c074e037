package cache

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// HotSet says which keys are hot right now, e.g. a hotkeys.Detector fed
// with the reads the caller counts. Keys are the caller's, without the
// Namespace. Hot is asked on every read, so it must be cheap.
//
// What a hot key gets, here: its reads and writes use the copies
// (Config.Copies), and L1 keeps it for HotL1TTL. What it does not need:
// a limit on its concurrent loads, since single-flight already runs at
// most one load per key per instance, however hot.
type HotSet interface {
	Hot(key string) bool
}

// hotCopies reports whether key (namespaced) is read and written through
// its copies: with no HotSet every key is, as before detection existed.
func (c *Cache) hotCopies(key string) bool {
	return c.cfg.Copies > 1 && (c.cfg.Hot == nil || c.cfg.Hot.Hot(strings.TrimPrefix(key, c.cfg.Namespace)))
}

// hotL1 reports whether key (namespaced) earns the longer L1 TTL.
func (c *Cache) hotL1(key string) bool {
	return c.cfg.Hot != nil && c.cfg.Hot.Hot(strings.TrimPrefix(key, c.cfg.Namespace))
}

// dropCopies deletes key's copies, for a write of a key that is not hot
// here: copies made while it was hot (here or on another instance) must
// not keep an older value that a later promotion would serve. One DEL per
// key, in one pipeline: they sit in different slots.
func (c *Cache) dropCopies(ctx context.Context, key string) {
	keys := c.copyKeys(key)
	if len(keys) == 0 {
		return
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		c.log.Warn("cache: deleting copies of a cold key failed", "key", key, "err", err)
	}
}

// respread writes key's copies from its entry, in the background, after a
// read of a hot key found its copy missing: a key just promoted has none
// yet, and without this its reads would fall back to the entry (one master)
// until its next load. Deduplicated per key; Close stops it.
func (c *Cache) respread(key string) {
	c.group.DoChan("copies\x00"+key, func() (any, error) {
		ctx, done, ok := c.owned(c.life, time.Second)
		if !ok {
			return nil, errClosed
		}
		defer done()
		var get *redis.StringCmd
		var ttl *redis.DurationCmd
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			get, ttl = p.Get(ctx, key), p.PTTL(ctx, key) // one slot: the entry's
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			c.log.Debug("cache: reading the entry to spread its copies failed", "key", key, "err", err)
			return nil, nil
		}
		b, gerr := get.Bytes()
		if d := ttl.Val(); gerr == nil && d > 0 {
			// writeCopies reads the entry back and undoes the copies if a
			// write replaced it meanwhile.
			c.writeCopies(ctx, key, b, d)
		}
		return nil, nil
	})
}
