package cache_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// heldGets is a go-redis hook that counts the GETs of key and holds the
// first one until release is closed; beforeWrite, when set, runs once just
// before the first write of key reaches Redis.
type heldGets struct {
	key         string
	gets        atomic.Int64
	release     chan struct{}
	beforeWrite func()
}

func (h *heldGets) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *heldGets) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "get" && len(args) == 2 && args[1] == h.key {
			if h.gets.Add(1) == 1 {
				select {
				case <-h.release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (h *heldGets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if args := cmd.Args(); h.beforeWrite != nil && cmd.Name() == "set" && len(args) > 1 && args[1] == h.key {
				run := h.beforeWrite
				h.beforeWrite = nil
				run()
				break
			}
		}
		return next(ctx, cmds)
	}
}

// sharedReadCache is a cache (L1 off, so every read reaches Redis) whose
// client holds the first GET of key until the hook's release.
func sharedReadCache(t *testing.T, key string) (*cache.Cache, *heldGets) {
	t.Helper()
	h := &heldGets{key: key, release: make(chan struct{})}
	rdb := dbtest.NewRedis(t, redisDB)
	rdb.AddHook(h)
	t.Cleanup(func() { dbtest.NewRedis(t, redisDB).Del(context.Background(), key) })
	return newCache(t, rdb, cache.Config{Mode: cache.ModeLock}), h
}

// TestBurstSharesOneRedisRead: 50 concurrent reads of one key on one
// instance while its Redis GET is slow cost one GET, not 50, and all get
// the value.
func TestBurstSharesOneRedisRead(t *testing.T) {
	t.Parallel()
	key := newPrefix() + "{shared:1}"
	c, h := sharedReadCache(t, key)
	if err := c.Set(t.Context(), key, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	const readers = 50
	var started, wg sync.WaitGroup
	started.Add(readers)
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			started.Done()
			r, err := c.Fetch(t.Context(), key, func(context.Context) ([]byte, error) { return []byte("loaded"), nil })
			if err == nil && string(r.Value) != "v1" {
				err = fmt.Errorf("read %q, want v1", r.Value)
			}
			errs <- err
		})
	}
	started.Wait()
	dbtest.WaitFor(t, "the first GET to be held", func() bool { return h.gets.Load() >= 1 })
	time.Sleep(100 * time.Millisecond) // the others reach the shared read meanwhile
	close(h.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A reader the scheduler kept back past the 100 ms may start a second
	// read; one per reader would be 50.
	if n := h.gets.Load(); n > 3 {
		t.Fatalf("%d concurrent reads cost %d Redis GETs, want 1 (at most 3)", readers, n)
	}
}

// TestReadAfterWriteReadsAgain: a read that starts after a write on this
// instance returned never gets the answer of a read that started before
// the write, or while it was on its way to Redis, and is still waiting on
// its GET: it reads again and sees the new value.
func TestReadAfterWriteReadsAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		during bool // the earlier read starts inside the write, not before it
	}{
		{"earlier read started before the write", false},
		{"earlier read started during the write", true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := newPrefix() + fmt.Sprintf("{shared:w%d}", i)
			c, h := sharedReadCache(t, key)
			if err := c.Set(t.Context(), key, []byte("old")); err != nil {
				t.Fatal(err)
			}
			load := func(context.Context) ([]byte, error) { return []byte("loaded"), nil }
			earlier := make(chan string, 1)
			startEarlier := func() {
				go func() {
					r, _ := c.Fetch(context.Background(), key, load)
					earlier <- string(r.Value)
				}()
				dbtest.WaitFor(t, "the earlier read's GET to be held", func() bool { return h.gets.Load() >= 1 })
			}
			if tc.during {
				h.beforeWrite = startEarlier
			} else {
				startEarlier()
			}
			if err := c.Set(t.Context(), key, []byte("new")); err != nil {
				t.Fatal(err)
			}
			after, err := c.Fetch(t.Context(), key, load)
			close(h.release)
			if err != nil {
				t.Fatal(err)
			}
			if string(after.Value) != "new" {
				t.Fatalf("a read after the write returned got %q, want %q", after.Value, "new")
			}
			if v := <-earlier; v != "old" && v != "new" {
				t.Fatalf("the earlier read got %q", v)
			}
		})
	}
}
