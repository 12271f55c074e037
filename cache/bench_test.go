package cache_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

func value(context.Context) ([]byte, error) {
	return []byte(`{"id":1,"name":"widget","price_cents":999}`), nil
}

// benchFetch fetches key b.N times and fails on any error or wrong answer.
func benchFetch(b *testing.B, c *cache.Cache, key string, wantL1 bool) {
	b.Helper()
	ctx := context.Background()
	if _, err := c.Fetch(ctx, key, value); err != nil {
		b.Fatalf("warm up: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Fetch(ctx, key, value)
		if err != nil || res.Status != cache.Hit || res.L1 != wantL1 {
			b.Fatalf("got %s L1=%v %v, want HIT L1=%v nil", res.Status, res.L1, err, wantL1)
		}
	}
	if loads := c.Stats().Loads; loads != 1 {
		b.Fatalf("got %d loads, want 1", loads)
	}
}

// BenchmarkFetchL1Hit: a hot key served from process memory.
func BenchmarkFetchL1Hit(b *testing.B) {
	c := newCache(b, dbtest.NewRedis(b, redisDB), cache.Config{Mode: cache.ModeLock, L1TTL: time.Minute})
	benchFetch(b, c, newPrefix()+"{p:1}", true)
}

// BenchmarkFetchRedisHit: one GET and a decode per call (L1 off).
func BenchmarkFetchRedisHit(b *testing.B) {
	c := newCache(b, dbtest.NewRedis(b, redisDB), cache.Config{Mode: cache.ModeLock})
	benchFetch(b, c, newPrefix()+"{p:1}", false)
}

// BenchmarkFetchLockPath: a cold key every iteration, so each call pays the
// whole miss path: GET, lock, double-check GET, instant load, fenced write.
func BenchmarkFetchLockPath(b *testing.B) {
	// A short TTL: the benchmark leaves one key per iteration behind.
	c := newCache(b, dbtest.NewRedis(b, redisDB), cache.Config{Mode: cache.ModeLock, TTL: 30 * time.Second})
	prefix := newPrefix()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		res, err := c.Fetch(ctx, prefix+"{p:"+strconv.Itoa(i)+"}", value)
		if err != nil || res.Status != cache.Miss {
			b.Fatalf("got %s %v, want MISS nil", res.Status, err)
		}
	}
	if loads := c.Stats().Loads; loads != int64(i) {
		b.Fatalf("got %d loads, want %d (one per cold key)", loads, i)
	}
}
