package middleware

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
//
// Spending is the hot path of every counted request, so it takes no lock
// and allocates nothing: the bucket is found in a sync.Map (reads of a
// known key write no shared memory) and a token is one atomic decrement of
// the current lease. Only taking a lease — once per leaseFraction of the
// limit — locks the client's bucket.
type LeaseStore struct {
	shared        limiter.Store
	leaseFraction float64
	buckets       leaseBuckets
	// windowEnd, when set, says to the millisecond when a shared counter's
	// window ends (WithWindowEnd); nil: only ulule's whole seconds.
	windowEnd func(ctx context.Context, sharedKey string) (time.Time, bool)
}

// leaseBucket is one client's budget on this instance.
type leaseBucket struct {
	cur atomic.Pointer[lease] // nil until the first lease
	mu  sync.Mutex            // held while a new lease is taken
}

// lease is what one INCRBY granted; immutable but for its tokens.
type lease struct {
	tokens    atomic.Int64 // leased and not yet spent; below 0 when spent out
	remaining int64        // the fleet's remaining budget after this lease
	until     int64        // unix ns: the tokens are good until then
	reset     int64        // the second by which the window has ended (unix s, rounded up)
	exhausted bool         // the shared window is used up until `until`, its end
}

// NewLeaseStore wraps shared; each lease is leaseFraction of the limit (at
// least 1 token). maxClients bounds the buckets kept in memory.
func NewLeaseStore(shared limiter.Store, leaseFraction float64, maxClients int) *LeaseStore {
	return &LeaseStore{shared: shared, leaseFraction: leaseFraction, buckets: leaseBuckets{max: int64(max(1, maxClients))}}
}

// WithWindowEnd lets an exhausted lease end exactly when its shared
// window does: end reports the window of a counter in the shared store
// (by the name the shared store was given) to the millisecond. ulule says
// only the whole second it ends in, so without it a refused client is
// refused up to a second past the window, and told to wait that long.
func (s *LeaseStore) WithWindowEnd(end func(ctx context.Context, sharedKey string) (time.Time, bool)) *LeaseStore {
	s.windowEnd = end
	return s
}

// RetryAt is when key's budget has room again, if this instance knows it
// is exhausted: the moment its exhausted lease ends. A client told to
// retry then (Retry-After) is not refused again for the same window.
func (s *LeaseStore) RetryAt(key string) (time.Time, bool) {
	v, ok := s.buckets.m.Load(key) // never a new bucket for a mere question
	if !ok {
		return time.Time{}, false
	}
	l := v.(*leaseBucket).cur.Load()
	// A lease of a window already over (another instance counted the next
	// one, as a Peek that refused shows) says nothing about when this one
	// ends.
	if l == nil || !l.exhausted || time.Now().UnixNano() >= l.until {
		return time.Time{}, false
	}
	return time.Unix(0, l.until), true
}

// Get spends one token of key's budget, leasing more from the shared store
// when this instance has none left.
func (s *LeaseStore) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	b := s.buckets.get(key)
	l := b.cur.Load()
	// A lease just taken is spent whatever the clock says: a window that
	// ends as it is granted must not make this loop lease again and again.
	for fresh := false; ; fresh = true {
		if l != nil && (fresh || time.Now().UnixNano() < l.until) {
			if out, ok := l.spend(rate.Limit); ok {
				return out, nil
			}
		}
		var err error
		if l, err = s.renew(ctx, b, l, key, rate); err != nil {
			return limiter.Context{}, err
		}
	}
}

// spend takes one token; false when the lease is spent out.
func (l *lease) spend(limit int64) (limiter.Context, bool) {
	if l.exhausted {
		return limiter.Context{Limit: limit, Reset: l.reset, Reached: true}, true
	}
	left := l.tokens.Add(-1)
	return limiter.Context{Limit: limit, Remaining: l.remaining + left, Reset: l.reset}, left >= 0
}

// renew returns key's next lease: a new one, unless another request
// replaced old while this one waited for the lock.
func (s *LeaseStore) renew(ctx context.Context, b *leaseBucket, old *lease, key string, rate limiter.Rate) (*lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.cur.Load(); cur != old {
		return cur, nil
	}
	l, err := s.lease(ctx, key, rate, old)
	if err != nil {
		return nil, err
	}
	b.cur.Store(l)
	return l, nil
}

// lease takes the next lease in one INCRBY. A lease that would pass the
// limit is not granted (ulule does not say how much of it fit), so near the
// end of a window an instance may leave up to one lease unspent: within a
// window the fleet errs on the side of admitting less (across its edge, see
// LeaseStore).
func (s *LeaseStore) lease(ctx context.Context, key string, rate limiter.Rate, prev *lease) (*lease, error) {
	n := max(1, int64(float64(rate.Limit)*s.leaseFraction))
	lctx, err := s.shared.Increment(ctx, sharedKey(key, rate), n, rate)
	if err != nil {
		return nil, err
	}
	// ulule reports the window's end in whole seconds, rounded down: the
	// window ends within the second after it. Tokens stay good until then.
	// X-RateLimit-Reset says the second by which the window has reset (the
	// end rounded up), on admitted and refused answers alike.
	end := sameWindow(time.Unix(lctx.Reset, 0).Add(time.Second), prev)
	l := &lease{reset: resetSecond(end), until: end.UnixNano()}
	if lctx.Reached {
		// Refusals are answered from memory until the window ends: exactly
		// then when the shared store can say (one round trip, once per
		// exhausted window), else at the latest it may end. Either way a
		// client that waits for Retry-After or X-RateLimit-Reset is not
		// refused again by this window.
		if latest := time.Now().Add(rate.Period); latest.Before(end) {
			end = latest // no window ends later
		}
		if s.windowEnd != nil {
			if at, ok := s.windowEnd(ctx, sharedKey(key, rate)); ok && at.Before(end) {
				end = at
			}
		}
		l.until, l.reset, l.exhausted = end.UnixNano(), resetSecond(end), true
		return l, nil
	}
	l.tokens.Store(n)
	l.remaining = lctx.Remaining
	return l, nil
}

// sameWindow is end, or prev's end when prev's window goes on for more
// than a second and end is at most a second from it: then both leases came
// from one window. ulule reads a window's end as the time its answer
// arrived plus the counter's TTL, so each lease reads it a round trip
// late; near a second's edge one lease's end came out a second after the
// last one's, and X-RateLimit-Reset changed within one window.
func sameWindow(end time.Time, prev *lease) time.Time {
	if prev == nil || prev.exhausted || time.Until(time.Unix(0, prev.until)) <= time.Second {
		return end
	}
	if d := end.Sub(time.Unix(0, prev.until)); d >= -time.Second && d <= time.Second {
		return time.Unix(0, prev.until)
	}
	return end
}

// Peek reports the shared count without spending.
func (s *LeaseStore) Peek(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.shared.Peek(ctx, sharedKey(key, rate), rate)
}

// Reset clears key everywhere: the shared count and this instance's lease.
func (s *LeaseStore) Reset(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	s.buckets.delete(key)
	return s.shared.Reset(ctx, sharedKey(key, rate), rate)
}

// Increment passes through: a batch spend is the shared store's to count.
func (s *LeaseStore) Increment(ctx context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	return s.shared.Increment(ctx, sharedKey(key, rate), count, rate)
}

// sharedKey names key's counter in the shared store after its window's
// length ("60s:203.0.113.7"). ulule sets a counter's expiry when its window
// opens and keeps it, so a fleet moved from RATE_LIMIT=5-D to 100-S kept
// the day's count and refused the client until the day ended. Called once
// per lease, not per request.
func sharedKey(key string, rate limiter.Rate) string {
	return strconv.FormatInt(int64(rate.Period/time.Second), 10) + "s:" + key
}

// resetSecond is the X-RateLimit-Reset of a window ending at end: the unix
// second by which it has ended (rounded up), so a client that waits until
// then is not refused by that window.
func resetSecond(end time.Time) int64 {
	return (end.UnixNano() + int64(time.Second) - 1) / int64(time.Second)
}
