package middleware

import (
	"context"
	"errors"
	"sync"
	"time"

	limiter "github.com/ulule/limiter/v3"
)

// FailoverStore is a limiter.Store that counts in the shared store (Redis:
// one budget across all instances) and, whenever that fails, in a
// per-instance fallback (memory), so a Redis outage neither fails every
// request nor lets every request through. The shared store is built lazily
// and rebuilt after failures, because ulule's Redis store needs Redis
// reachable when it is created. Once it fails, the fallback alone counts
// for retryGap: a hung Redis would otherwise make every count wait for its
// I/O timeout again (a lease renewal holds its client's bucket meanwhile,
// so every request of that client waited with it).
type FailoverStore struct {
	newShared  func() (limiter.Store, error)
	fallback   limiter.Store
	onFallback func(error) // told each time the fallback answers

	mu       sync.Mutex // guards shared and nextTry
	shared   limiter.Store
	nextTry  time.Time
	retryGap time.Duration
}

// NewFailoverStore builds the store; newShared is called on first use and
// again at most every retryGap after a failure.
func NewFailoverStore(newShared func() (limiter.Store, error), fallback limiter.Store, retryGap time.Duration, onFallback func(error)) *FailoverStore {
	return &FailoverStore{newShared: newShared, fallback: fallback, retryGap: retryGap, onFallback: onFallback}
}

// Connect builds the shared store now, if it can (else the next use tries
// again): the composition root calls it at start, so that no request pays
// for ulule's script loads, two round trips that a hung Redis stretches to
// two I/O timeouts outside the request's deadline.
func (s *FailoverStore) Connect() error {
	_, err := s.sharedStore()
	return err
}

func (s *FailoverStore) sharedStore() (limiter.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Now().Before(s.nextTry) {
		return nil, errSharedDown
	}
	if s.shared != nil {
		return s.shared, nil
	}
	st, err := s.newShared()
	if err != nil {
		s.nextTry = time.Now().Add(s.retryGap)
		return nil, err
	}
	s.shared = st
	return st, nil
}

var errSharedDown = errors.New("shared rate-limit store unavailable")

// failed sets the shared store aside for retryGap.
func (s *FailoverStore) failed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextTry = time.Now().Add(s.retryGap)
}

func (s *FailoverStore) do(ctx context.Context, op func(limiter.Store) (limiter.Context, error)) (limiter.Context, error) {
	st, err := s.sharedStore()
	if err == nil {
		var lctx limiter.Context
		if lctx, err = op(st); err == nil {
			return lctx, nil
		}
		if ctx.Err() == nil { // not the caller's own deadline or hang-up
			s.failed()
		}
	}
	if s.onFallback != nil {
		s.onFallback(err)
	}
	return op(s.fallback)
}

// Get increments and returns the client's count.
func (s *FailoverStore) Get(ctx context.Context, key string, r limiter.Rate) (limiter.Context, error) {
	return s.do(ctx, func(st limiter.Store) (limiter.Context, error) { return st.Get(ctx, key, r) })
}

// Peek returns the client's count without incrementing it.
func (s *FailoverStore) Peek(ctx context.Context, key string, r limiter.Rate) (limiter.Context, error) {
	return s.do(ctx, func(st limiter.Store) (limiter.Context, error) { return st.Peek(ctx, key, r) })
}

// Reset sets the client's count to zero.
func (s *FailoverStore) Reset(ctx context.Context, key string, r limiter.Rate) (limiter.Context, error) {
	return s.do(ctx, func(st limiter.Store) (limiter.Context, error) { return st.Reset(ctx, key, r) })
}

// Increment adds count to the client's count.
func (s *FailoverStore) Increment(ctx context.Context, key string, count int64, r limiter.Rate) (limiter.Context, error) {
	return s.do(ctx, func(st limiter.Store) (limiter.Context, error) { return st.Increment(ctx, key, count, r) })
}
