package cache_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// roundTrips is a go-redis hook that counts the GETs of keys under prefix
// and the round trips that carried them (a plain GET, or a pipeline with at
// least one such GET), optionally slowing each round trip by delay.
type roundTrips struct {
	prefix string
	delay  time.Duration
	gets   atomic.Int64
	trips  atomic.Int64
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.count(ctx, []redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.count(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

func (h *roundTrips) count(ctx context.Context, cmds []redis.Cmder, send func() error) error {
	var n int64
	for _, cmd := range cmds {
		if args := cmd.Args(); cmd.Name() == "get" && len(args) == 2 && strings.HasPrefix(fmt.Sprint(args[1]), h.prefix) {
			n++
		}
	}
	if n > 0 {
		h.gets.Add(n)
		h.trips.Add(1)
		if h.delay > 0 {
			select {
			case <-time.After(h.delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return send()
}

// roundTripCache is a cache (L1 off, so every read reaches Redis) in a
// namespace of its own, whose client's round trips carrying its GETs are
// counted and each held for delay.
func roundTripCache(t *testing.T, delay time.Duration) (*cache.Cache, *roundTrips) {
	t.Helper()
	ns := newPrefix()
	h := &roundTrips{prefix: ns, delay: delay}
	rdb := dbtest.NewRedis(t, redisDB)
	rdb.AddHook(h)
	return newCache(t, rdb, cache.Config{Mode: cache.ModeLock, Namespace: ns}), h
}

// TestBurstOfReadsIsFewRoundTrips: 200 concurrent reads of 200 distinct
// keys, each round trip 20 ms long (a loaded Redis or a distant one), go to
// Redis as a few pipelines, not as 200 GETs queued for the client's
// connections (ten round trips in a row on its 20); every read still gets
// its own key's value.
func TestBurstOfReadsIsFewRoundTrips(t *testing.T) {
	t.Parallel()
	c, h := roundTripCache(t, 20*time.Millisecond)
	const reads = 200
	for i := range reads {
		if err := c.Set(t.Context(), fmt.Sprintf("{k%d}", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range reads {
			_ = c.Invalidate(context.Background(), fmt.Sprintf("{k%d}", i))
		}
	})
	h.gets.Store(0)
	h.trips.Store(0)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, reads)
	for i := range reads {
		wg.Go(func() {
			<-start
			r, err := c.Fetch(t.Context(), fmt.Sprintf("{k%d}", i), func(context.Context) ([]byte, error) {
				return fmt.Appendf(nil, "loaded%d", i), nil
			})
			switch {
			case err != nil:
				errs <- err
			case r.Status != cache.Hit || string(r.Value) != fmt.Sprintf("v%d", i):
				errs <- fmt.Errorf("key %d: %s %q, want a hit on v%d", i, r.Status, r.Value, i)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	gets, trips := h.gets.Load(), h.trips.Load()
	if gets != reads {
		t.Fatalf("%d GETs seen for %d reads, want one each", gets, reads)
	}
	// Four senders, each taking what queued while the one before was on
	// its way: a handful of round trips in all. A quarter of one per read
	// leaves a loaded machine room and is still far from one per read.
	if trips > reads/4 {
		t.Fatalf("%d reads cost %d round trips, want at most %d: concurrent GETs must share pipelines",
			reads, trips, reads/4)
	}
	t.Logf("%d reads: %d GETs in %d round trips", reads, gets, trips)
}

// TestBatchedReadGivesUpAtItsDeadline: a read queued behind a slow round
// trip stops waiting at its own deadline, and the reads sent after it are
// answered.
func TestBatchedReadGivesUpAtItsDeadline(t *testing.T) {
	t.Parallel()
	c, _ := roundTripCache(t, 300*time.Millisecond)
	if err := c.Set(t.Context(), "{k}", []byte("v")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Invalidate(context.Background(), "{k}") })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := c.Fetch(ctx, "{k}", func(context.Context) ([]byte, error) { return []byte("loaded"), nil })
	took := time.Since(begin)
	if err == nil {
		t.Fatalf("a read with a 50 ms deadline behind a 300 ms round trip succeeded")
	}
	// Ends at its deadline, not at the round trip's end (300 ms).
	if took >= 250*time.Millisecond {
		t.Fatalf("the read gave up after %v, want about its 50 ms deadline", took)
	}
	r, err := c.Fetch(t.Context(), "{k}", func(context.Context) ([]byte, error) { return []byte("loaded"), nil })
	if err != nil || string(r.Value) != "v" {
		t.Fatalf("next read: %q, %v, want v", r.Value, err)
	}
}
