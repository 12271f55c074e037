package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Invalidations that failed. A write that commits while Redis is out of
// reach (down, hung, or cut off from this instance alone) cannot delete the
// entry it made old. Left there, that entry (a "not found" for a product
// just created, or the value before an update) was served by every
// instance until its TTL once Redis answered again, the writer included.
// So the key is kept here and its invalidation tried again: in the
// background, with backoff, until Redis takes it, and at once by any read
// of the key on this instance, which until then answers from the source
// (outageRead) and never from the entry it knows to be old. An instance
// cut off for good keeps trying until it stops; only then does the TTL
// bound the old entry again.

const (
	// maxPending bounds the keys kept; past it a failed invalidation is
	// left to the TTL, as before, and logged.
	maxPending = 10_000
	// The background retry waits pendingFirst after a failure, doubling up
	// to pendingCap while Redis stays out of reach; each attempt has
	// pendingLimit.
	pendingFirst = 250 * time.Millisecond
	pendingCap   = 2 * time.Second
	pendingLimit = time.Second
)

// pending is the set of keys (namespaced) whose invalidation failed.
type pending struct {
	n    atomic.Int64 // len(keys), so that a read checks with one load
	mu   sync.Mutex
	keys map[string]struct{}
	kick chan struct{} // wakes retryPending; capacity 1
}

func newPending() *pending {
	return &pending{keys: map[string]struct{}{}, kick: make(chan struct{}, 1)}
}

// add keeps key; false when the set is full.
func (p *pending) add(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.keys[key]; !ok {
		if len(p.keys) >= maxPending {
			return false
		}
		p.keys[key] = struct{}{}
		p.n.Store(int64(len(p.keys)))
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return true
}

// has reports whether key's invalidation is pending.
func (p *pending) has(key string) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.keys[key]
	return ok
}

// done forgets key: its invalidation went through.
func (p *pending) done(key string) {
	if p.n.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keys, key)
	p.n.Store(int64(len(p.keys)))
}

// list is a copy of the keys.
func (p *pending) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.keys))
	for k := range p.keys {
		out = append(out, k)
	}
	return out
}

// invalidateLater keeps key, whose invalidation failed, for another try.
func (c *Cache) invalidateLater(key string) {
	if !c.pending.add(key) {
		c.log.Warn("cache: too many failed invalidations pending; this one is left to the entry's TTL", "key", key)
	}
}

// retryInvalidate tries key's invalidation once more, within pendingLimit
// and ctx, and forgets key when it goes through.
func (c *Cache) retryInvalidate(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, pendingLimit)
	defer cancel()
	if err := c.invalidate(ctx, key); err != nil {
		return err
	}
	c.pending.done(key)
	c.stats.invalidationsRetried.Add(1)
	return nil
}

// retryPending runs until Close: woken by a failed invalidation, it tries
// the pending keys again, with backoff, until none is left. A pass stops at
// the first key Redis does not take: Redis is still out of reach, and
// trying the rest would only wait out more timeouts.
func (c *Cache) retryPending() {
	defer c.wg.Done()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.pending.kick:
		}
		wait := pendingFirst
		for c.pending.n.Load() > 0 {
			t := time.NewTimer(wait)
			select {
			case <-c.life.Done():
				t.Stop()
				return
			case <-t.C:
			}
			wait = min(2*wait, pendingCap)
			for _, key := range c.pending.list() {
				if c.retryInvalidate(c.life, key) != nil {
					break
				}
				wait = pendingFirst // Redis answers: the rest soon
			}
		}
	}
}
