package cache

// Every Redis round trip on an entry's key: reads (of the entry or a copy),
// the unconditional write, the fenced write of a load under the lock, and
// the copies that follow a write.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stampede-guard/api/cache/internal/redislock"
)

// sharedRead is read, shared by this instance's concurrent readers of key:
// a hot key that just left L1 (or a cold one under a burst) costs one Redis
// GET per instance instead of one per request, and the lock holder's SET NX
// does not queue for a pool connection behind a hundred identical GETs.
// The flight is keyed by this instance's write and invalidation counts as
// well, so a read that starts after a write here never gets the answer of a
// read that started before it (each caller's L1 fill keeps its own check).
// The shared read is detached from any one caller: one that gives up stops
// waiting, the others still get the answer.
func (c *Cache) sharedRead(ctx context.Context, key string) (Entry, bool, error) {
	epoch := strconv.FormatUint(c.writes.Load()+c.l1.mark(), 36)
	ch := c.reads.DoChan(key+"\x00"+epoch, func() (any, error) {
		rctx, done, ok := c.owned(ctx, max(c.cfg.LockWait, sharedReadLimit))
		if !ok { // closed: read on the caller's own context, unshared
			e, found, err := c.read(ctx, key)
			return sharedEntry{e, found}, err
		}
		defer done()
		e, found, err := c.read(rctx, key)
		return sharedEntry{e, found}, err
	})
	select {
	case r := <-ch:
		se, _ := r.Val.(sharedEntry)
		return se.e, se.found, r.Err
	case <-ctx.Done():
		return Entry{}, false, fmt.Errorf("cache read %s: %w", key, ctx.Err())
	}
}

// sharedReadLimit is the least a shared read may take: a pool wait plus
// a read, by the client's own timeouts (redisconn), so a short LOCK_WAIT
// does not turn a slow GET into an outage for every reader sharing it.
// Each reader still stops waiting at its own deadline.
const sharedReadLimit = 2 * time.Second

// sharedEntry is what one shared read found.
type sharedEntry struct {
	e     Entry
	found bool
}

// read fetches and decodes key from Redis. ok is false on a miss; a corrupt
// or foreign value is a miss too, logged once per key until it is replaced.
func (c *Cache) read(ctx context.Context, key string) (e Entry, ok bool, err error) {
	return c.readAs(ctx, key, c.readKey(key))
}

// readKey picks the key a read uses: a random copy of a hot key, or the
// entry itself.
func (c *Cache) readKey(key string) string {
	if !c.hotCopies(key) {
		return key
	}
	if i := rand.IntN(c.cfg.Copies); i > 0 { // #nosec G404 -- spreads reads over copies; not a secret
		return copyKey(key, c.copyNumbersOf(key)[i-1])
	}
	return key
}

// readAs reads key through rk, key itself or one of its copies.
func (c *Cache) readAs(ctx context.Context, key, rk string) (e Entry, ok bool, err error) {
	b, err := c.get(ctx, rk, rk != key)
	if errors.Is(err, redis.Nil) && rk != key {
		// A copy expired (its TTL is jittered shorter), was evicted, or its
		// write failed: the entry itself decides, never the database.
		c.stats.copyMisses.Add(1)
		if b, err = c.gets.get(ctx, key); err == nil && c.cfg.Hot != nil {
			c.respread(key) // just promoted (or a copy lost): make them
		}
	}
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache get %s: %w", key, err)
	}
	e, ok = c.decode(key, b)
	return e, ok, nil
}

// decode opens b, read under key, as an entry; a corrupt, foreign or
// refused one is a miss, logged once per key until it is replaced.
func (c *Cache) decode(key string, b []byte) (Entry, bool) {
	e, err := c.open(key, b)
	if err == nil {
		err = c.admit(key, e, c.now())
	}
	if err != nil {
		c.refused(key, len(b), err)
		return Entry{}, false
	}
	return e, true
}

// get reads rk; a copy's read goes to Config.ReplicaReads when set, and
// back to the master if that client fails (a replica down or lagging past
// its timeout must not turn a hit into a load).
func (c *Cache) get(ctx context.Context, rk string, isCopy bool) ([]byte, error) {
	if isCopy && c.cfg.ReplicaReads != nil {
		b, err := c.cfg.ReplicaReads.Get(ctx, rk).Bytes()
		if err == nil || errors.Is(err, redis.Nil) {
			return b, err
		}
		c.log.Debug("cache: replica read failed, reading the master", "key", rk, "err", err)
	}
	return c.gets.get(ctx, rk)
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
	c.floors.set(key, e.Version)
	c.writeCopies(ctx, key, b, ttl)
	return nil
}

// storeFenced stores a value loaded under lock with a fenced write that
// also releases it, then its copies and the fill signal. A lost lock or a
// failed write stores nothing: the value is still a correct answer for the
// load's own callers.
func (c *Cache) storeFenced(ctx context.Context, key string, lock *redislock.Lock, e Entry, ttl time.Duration) {
	b := c.seal(key, e)
	// The load may have used up ctx; storing the value it paid for, and
	// freeing the waiters, deserves a short deadline of its own.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	sctx, write := c.tracer.Start(sctx, spanWrite)
	defer write.End()
	// The fill signal goes out in the same script as the write: waiters on
	// other instances hear of the value one round trip sooner (issue 28).
	var announce redislock.Announce
	if c.cfg.FillChannel != "" {
		announce = redislock.Announce{Channel: c.cfg.FillChannel, Message: c.fillMessage(key, e.SoftExpiry, e.Version)}
	}
	err := lock.SetAndRelease(sctx, key, b, ttl, announce)
	write.SetAttributes(attrFenced.String(writeOutcome(err)))
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		// Our lock expired mid-load and someone else may hold it now: their
		// value wins. Ours is still a correct answer for our own callers.
		c.stats.lockLost.Add(1)
		c.log.Warn("cache: lock lost during load, value not stored", "key", key, "lock_ttl", c.cfg.LockTTL)
	case err != nil:
		c.log.Warn("cache: fenced store failed", "key", key, "err", err)
		c.release(key, lock) // do not leave waiters polling until the lock's TTL
	default:
		c.corrupt.Delete(key)
		c.floors.set(key, e.Version)
		c.writeCopies(sctx, key, b, ttl)
	}
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
