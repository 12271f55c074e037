package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// keyConns is how many of an instance's calls for one key (a product's
// row) may hold connections at once. Writes of one row run one after the
// other anyway (each waits for the row's lock), so a third one gains
// nothing by holding a connection while it waits. When a transaction
// outside the app holds the row (an admin's edit, a batch job), every
// write of it held one of the pool's connections for lock_timeout: thirty
// orders of one product took all twenty, and every other product's reads
// and orders were refused for as long as the row was held.
const keyConns = 2

// ErrKeyBusy: keyConns calls for the same key already hold connections,
// and none finished within the acquire timeout; nothing was sent.
var ErrKeyBusy = errors.New("db: too many writes of this row at once")

// keySlots are the per-key places (keyConns each) in front of the pool.
type keySlots struct {
	mu   sync.Mutex
	keys map[int64]*keySlot
}

// keySlot is one key's places and how many callers use or wait for them,
// so that the entry is dropped when the last one leaves.
type keySlot struct {
	places chan struct{}
	users  int
}

// WithKey is With for a call that writes the row of key: it first takes
// one of the key's keyConns places, waiting at most the acquire timeout
// (the caller's deadline still bounds it) and holding no connection
// meanwhile; a caller that finds none in time is refused with ErrKeyBusy
// and a retry hint, as a full pool refuses.
func (p *Pool) WithKey(ctx context.Context, key int64, fn func(Conn) error) error {
	leave, err := p.keys.take(ctx, key, p.cfg.AcquireTimeout)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		p.shed.Add(1)
		refused.Pool = p.cfg.Name
		return refused
	case err != nil:
		return fmt.Errorf("db %s: waiting for a place for key %d: %w", p.cfg.Name, key, err)
	}
	defer leave()
	return p.With(ctx, fn)
}

func (k *keySlots) take(ctx context.Context, key int64, wait time.Duration) (func(), error) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[int64]*keySlot{}
	}
	s := k.keys[key]
	if s == nil {
		s = &keySlot{places: make(chan struct{}, keyConns)}
		k.keys[key] = s
	}
	s.users++
	k.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.places <- struct{}{}:
		return func() { <-s.places; k.done(key, s) }, nil
	case <-t.C:
		k.done(key, s)
		return nil, &RefusedError{Reason: ErrKeyBusy, RetryAfter: time.Second}
	case <-ctx.Done():
		k.done(key, s)
		return nil, ctx.Err()
	}
}

// done drops one user of key's slot, and the slot with its last user.
func (k *keySlots) done(key int64, s *keySlot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(k.keys, key)
	}
}
