package middleware

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	limiter "github.com/ulule/limiter/v3"
)

// LeaseStore is a limiter.Store that keeps a client's budget shared across
// instances without a Redis round trip per request: each instance takes a
// lease of a few tokens from the shared store in one INCRBY and spends it in
// memory. A lease is a fraction of the limit (leaseFraction), so N instances
// can hold at most N leases of a window unused: the fleet admits at least
// limit − N·lease in a window. A lease may be spent up to a second past its
// window's end (ulule reports the end in whole seconds), so with windows of
// a few seconds the fleet may admit up to N·lease over: within 5 % for 5
// instances at the default 1 %. Once the shared count passes the
// limit, the bucket is known exhausted until the window resets, so refusals
// cost no round trip either. Redis failures are the shared store's to
// handle (FailoverStore falls back to memory).
type LeaseStore struct {
	shared        limiter.Store
	leaseFraction float64
	buckets       *lru.Cache[string, *leaseBucket]
}

// leaseBucket is one client's budget on this instance.
type leaseBucket struct {
	mu        sync.Mutex
	tokens    int64     // leased from the shared store and not yet spent
	remaining int64     // the fleet's remaining budget after the last lease
	reset     time.Time // end of the shared window the tokens belong to
	exhausted bool      // the shared window is used up until reset
}

// NewLeaseStore wraps shared; each lease is leaseFraction of the limit (at
// least 1 token). maxClients bounds the buckets kept in memory.
func NewLeaseStore(shared limiter.Store, leaseFraction float64, maxClients int) *LeaseStore {
	buckets, _ := lru.New[string, *leaseBucket](maxClients) // errors only for a size < 1
	return &LeaseStore{shared: shared, leaseFraction: leaseFraction, buckets: buckets}
}

// Get spends one token of key's budget, leasing more from the shared store
// when this instance has none left.
func (s *LeaseStore) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	b := s.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !time.Now().Before(b.reset) { // a new window: what was leased has lapsed
		b.tokens, b.exhausted = 0, false
	}
	if b.tokens == 0 && !b.exhausted {
		if err := s.lease(ctx, b, key, rate); err != nil {
			return limiter.Context{}, err
		}
	}
	out := limiter.Context{Limit: rate.Limit, Reset: b.reset.Unix()}
	if b.exhausted {
		out.Reached = true
		return out, nil
	}
	b.tokens--
	out.Remaining = b.remaining + b.tokens
	return out, nil
}

// bucket returns key's bucket, adding it if new (racing adders share one).
func (s *LeaseStore) bucket(key string) *leaseBucket {
	if b, ok := s.buckets.Get(key); ok {
		return b
	}
	fresh := &leaseBucket{}
	if prev, found, _ := s.buckets.PeekOrAdd(key, fresh); found {
		return prev
	}
	return fresh
}

// lease takes the next lease in one INCRBY. A lease that would pass the
// limit is not granted (ulule does not say how much of it fit), so near the
// end of a window an instance may leave up to one lease unspent: the fleet
// errs on the side of admitting less, never more.
func (s *LeaseStore) lease(ctx context.Context, b *leaseBucket, key string, rate limiter.Rate) error {
	n := max(1, int64(float64(rate.Limit)*s.leaseFraction))
	lctx, err := s.shared.Increment(ctx, key, n, rate)
	if err != nil {
		return err
	}
	// ulule reports the window's end in whole seconds, rounded down: the
	// window ends within the second after it. Tokens stay good until then.
	b.reset = time.Unix(lctx.Reset, 0).Add(time.Second)
	if lctx.Reached {
		b.exhausted, b.tokens, b.remaining = true, 0, 0
		return nil
	}
	b.tokens, b.remaining = n, lctx.Remaining
	return nil
}

// Peek reports the shared count without spending.
func (s *LeaseStore) Peek(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.shared.Peek(ctx, key, rate)
}

// Reset clears key everywhere: the shared count and this instance's lease.
func (s *LeaseStore) Reset(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	s.buckets.Remove(key)
	return s.shared.Reset(ctx, key, rate)
}

// Increment passes through: a batch spend is the shared store's to count.
func (s *LeaseStore) Increment(ctx context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	return s.shared.Increment(ctx, key, count, rate)
}
