package cache_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// afterMiss is a go-redis hook that calls plant once, synchronously, right
// after the first GET of key that found nothing: the instance using the
// client has just missed, and has not tried the lock yet.
type afterMiss struct {
	key   string
	once  atomic.Bool
	plant func()
}

func (h *afterMiss) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *afterMiss) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if cmd.Name() == "get" && len(args) == 2 && args[1] == h.key && errors.Is(err, redis.Nil) && h.once.CompareAndSwap(false, true) {
			h.plant()
		}
		return err
	}
}

func (h *afterMiss) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestDoubleCheckAfterLock: instance A misses a cold key; before A tries the
// lock, instance B (another client) takes the lock, loads, stores the value
// and unlocks. A then gets the lock on a key that is already filled. The
// double-check after taking the lock must find B's value, so A answers it
// without loading: one load in all, not two. The interleaving is forced by a
// hook on A's Redis client, so the test is deterministic.
func TestDoubleCheckAfterLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := newPrefix() + "{dc:1}"
	cfg := cache.Config{Mode: cache.ModeLock, LockWait: 2 * time.Second}

	b := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
	var loadsA, loadsB atomic.Int64
	var planted error
	hook := &afterMiss{key: key, plant: func() {
		r, err := b.Fetch(ctx, key, slowLoad(&loadsB, 0, "from-b"))
		if err == nil && string(r.Value) != "from-b" {
			err = errors.New("B fetched " + string(r.Value))
		}
		planted = err
	}}
	rdbA := dbtest.NewRedis(t, redisDB)
	rdbA.AddHook(hook)
	a := newCache(t, rdbA, cfg)
	admin := dbtest.NewRedis(t, redisDB)
	t.Cleanup(func() { admin.Del(context.Background(), key, "lock:"+key) })

	r, err := a.Fetch(ctx, key, slowLoad(&loadsA, 0, "from-a"))
	if err != nil {
		t.Fatalf("A fetch: %v", err)
	}
	if !hook.once.Load() || planted != nil {
		t.Fatalf("B did not store the value between A's miss and A's lock (hook ran: %v, B: %v)", hook.once.Load(), planted)
	}
	st := a.Stats()
	if st.LockAcquired != 1 {
		t.Fatalf("A took the lock %d times, want 1 (the scenario needs A to hold the lock after B's store)", st.LockAcquired)
	}
	if loadsB.Load() != 1 || loadsA.Load() != 0 {
		t.Errorf("loads: A %d, B %d; want A 0, B 1 (A's double-check after locking must find B's value)", loadsA.Load(), loadsB.Load())
	}
	if string(r.Value) != "from-b" {
		t.Errorf("A answered %q, want B's value %q", r.Value, "from-b")
	}
	if n, _ := admin.Exists(ctx, "lock:"+key).Result(); n != 0 {
		t.Errorf("lock key left behind after the double-check found the value")
	}
}
