package cache

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fills wakes this instance's waiters the moment any instance stores a key
// (or gives up its lock), instead of leaving them to find the value at their
// next poll: a fill landing just after a poll used to cost a whole backoff
// step (up to 200 ms) of latency, and N instances polled N times as often.
// Whoever writes under a lock publishes "<soft expiry µs> <key>" on
// FillChannel; every
// instance listens once and wakes the waiters of that key. Polling stays as
// the fallback when a message is lost (Redis pub/sub is at-most-once).
type fills struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// watch registers interest in key. Register before the read that may miss,
// so a fill between that read and the wait still wakes the waiter.
func (f *fills) watch(key string) (woken <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.waiters == nil {
		f.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if f.waiters[key] == nil {
		f.waiters[key] = map[chan struct{}]struct{}{}
	}
	f.waiters[key][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.waiters[key], ch)
		if len(f.waiters[key]) == 0 {
			delete(f.waiters, key)
		}
		f.mu.Unlock()
	}
}

// notify wakes every waiter of key; a waiter already woken stays so.
func (f *fills) notify(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// signal tells every instance that key was filled (with an entry fresh
// until soft, of version version; zero when only its lock was released).
// Best effort: a lost signal costs the waiters one poll interval, and the
// floors (floor.go) one version they would have learnt from it.
func (c *Cache) signal(ctx context.Context, key string, soft time.Time, version uint64) {
	if c.cfg.FillChannel == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := c.rdb.Publish(ctx, c.cfg.FillChannel, c.fillMessage(key, soft, version)).Err(); err != nil {
		c.log.Debug("cache: fill signal not sent", "key", key, "err", err)
	}
}

// listenFills wakes waiters, and drops L1 copies, named on FillChannel
// until Close. A fill is also a change: with stale values served from L1,
// the refresh's write must evict them on every instance.
func (c *Cache) listenFills(sub *redis.PubSub) {
	c.consume(sub, func(m *redis.Message) {
		key, soft, version := c.parseFill(m.Payload)
		if version > 0 {
			c.floors.admit(key, version) // a signed version: older entries are replays now
		}
		if !soft.IsZero() || version > 0 {
			// An older copy (a stale value served from L1, or an older
			// version) gives way to the fill, here too; the filled value
			// itself is kept.
			c.l1.evictOlder(key, soft, version)
		}
		c.fills.notify(key)
		c.stats.fillSignals.Add(1)
	})
}
