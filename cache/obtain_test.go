package cache_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// keyTrips is a go-redis hook that counts the round trips (a command, or a
// pipeline) naming a key that contains part.
type keyTrips struct {
	part string
	n    atomic.Int64
}

func (h *keyTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *keyTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *keyTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds)
		return next(ctx, cmds)
	}
}

func (h *keyTrips) count(cmds []redis.Cmder) {
	for _, cmd := range cmds {
		for _, a := range cmd.Args()[1:] {
			if strings.Contains(fmt.Sprint(a), h.part) {
				h.n.Add(1)
				return
			}
		}
	}
}

// TestColdMissQueriesAfterTwoRoundTrips: a cold key's load under the lock
// starts after two Redis round trips, the read that missed and the lock
// attempt, which also reads the entry for the double-check. A third, the
// double-check's own GET, used to come between the lock and the query, on
// the cores a stampede's burst crowds, where each round trip waits its
// turn to run again. Each mode that loads under the lock.
func TestColdMissQueriesAfterTwoRoundTrips(t *testing.T) {
	t.Parallel()
	for _, mode := range []cache.Mode{cache.ModeLock, cache.ModeSWR, cache.ModeXFetch} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			key := newPrefix() + "{cold}"
			h := &keyTrips{part: key}
			rdb := dbtest.NewRedis(t, redisDB)
			rdb.AddHook(h)
			c := newCache(t, rdb, cache.Config{Mode: mode})
			t.Cleanup(func() { _ = c.Invalidate(context.Background(), key) })

			var before int64
			r, err := c.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
				before = h.n.Load()
				return []byte("v1"), nil
			})
			if err != nil || string(r.Value) != "v1" {
				t.Fatalf("fetch: %q, %v", r.Value, err)
			}
			if before != 2 {
				t.Errorf("%d round trips on the key before its load, want 2 (the read, the lock attempt with the double-check)", before)
			}
		})
	}
}
