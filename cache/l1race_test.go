package cache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// slowReply holds the reply of a GET for a while once armed: the read has
// happened in Redis, but its value reaches the cache late, as on a busy
// network or a paused process.
type slowReply struct {
	armed atomic.Bool
	delay time.Duration
}

func (h *slowReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *slowReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "get" && h.armed.CompareAndSwap(true, false) {
			time.Sleep(h.delay)
		}
		return err
	}
}

// TestL1NoOldValueAfterInvalidation: instance A reads v1 from Redis; before
// the value reaches A, instance B writes v2 and A's L1 hears the
// invalidation. A's late v1 must not be put in L1 after that, where it would
// be served for the whole L1 TTL: A's next read sees v2.
func TestL1NoOldValueAfterInvalidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name     string
		tracking bool
	}{
		{"pubsub", false},
		{"tracking", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := newPrefix()
			cfg := cache.Config{Mode: cache.ModeLock, L1TTL: time.Minute, Channel: "inv:" + dbtest.Unique()}
			if tc.tracking {
				opt := *dbtest.NewRedis(t, redisDB).Options()
				cfg.Tracking, cfg.TrackPrefixes = &opt, []string{prefix}
			}
			rdbA := dbtest.NewRedis(t, redisDB)
			hook := &slowReply{delay: 300 * time.Millisecond}
			rdbA.AddHook(hook)
			a := newCache(t, rdbA, cfg)
			b := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
			key := prefix + "{p:1}"
			if err := b.Set(ctx, key, []byte("v1")); err != nil {
				t.Fatalf("Set v1: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // let v1's own invalidation pass

			hook.armed.Store(true)
			done := make(chan cache.Result, 1)
			go func() {
				res, _ := a.Fetch(ctx, key, slowLoad(new(atomic.Int64), 0, "from db"))
				done <- res
			}()
			time.Sleep(100 * time.Millisecond) // A has read v1; its reply is held
			if err := b.Set(ctx, key, []byte("v2")); err != nil {
				t.Fatalf("Set v2: %v", err)
			}
			if first := <-done; string(first.Value) != "v1" {
				t.Fatalf("A's held read: got %q, want v1 (the test's timing did not hold)", first.Value)
			}
			res, err := a.Fetch(ctx, key, slowLoad(new(atomic.Int64), 0, "from db"))
			if err != nil || string(res.Value) != "v2" {
				t.Errorf("A's next read: got %q (L1=%v, err %v), want v2", res.Value, res.L1, err)
			}
		})
	}
}
