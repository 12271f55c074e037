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

// TestFailedInvalidationIsTriedAgain: instance A writes while its link to
// Redis is cut, so its invalidation fails and Redis keeps the entry its
// write made old. Once the link mends, A answers the new value at once
// (its read tries the invalidation first), and B, which never lost Redis,
// answers it within a few seconds (A's background retry deletes the entry
// when A reads nothing). Before, both served the old entry until its TTL
// (a minute here). With a value ("an update") and with a cached "not
// found" ("a create").
func TestFailedInvalidationIsTriedAgain(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // "": absent
		// writerFirst: A reads right after the mend, before B; else B
		// reads first, and only A's background retry can help it.
		writerFirst bool
	}{
		{"an update, the writer reads first", "old", "new", true},
		{"a create, the writer reads first", "", "new", true},
		{"an update, the other instance reads first", "old", "new", false},
		{"a create, the other instance reads first", "", "new", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := cache.Config{Mode: cache.ModeSWR, TTL: time.Minute, SoftTTL: time.Minute, NegativeTTL: time.Minute}
			link := dbtest.NewProxy(t, dbtest.RedisAddr())
			rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { _ = rdb.Close() }) // after A's Close, registered later
			a := newCache(t, rdb, cfg)
			b := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
			t.Cleanup(func() { link.SetDown(false) }) // before A's Close

			var truth atomic.Value // what the database holds
			truth.Store(tt.old)
			load := func(context.Context) ([]byte, error) {
				if v := truth.Load().(string); v != "" {
					return []byte(v), nil
				}
				return nil, cache.ErrAbsent
			}
			value := func(r cache.Result) string {
				if r.Absent {
					return ""
				}
				return string(r.Value)
			}
			key := newPrefix() + "{p:1}"
			for name, c := range map[string]*cache.Cache{"A": a, "B": b} {
				if r, err := c.Fetch(ctx, key, load); err != nil || value(r) != tt.old {
					t.Fatalf("%s before the write: %q, %v; want %q", name, value(r), err, tt.old)
				}
			}

			link.SetDown(true)
			truth.Store(tt.new) // the write commits
			if err := a.Invalidate(ctx, key); err == nil {
				t.Fatal("invalidation with the link cut: no error, so this test proves nothing")
			}
			if r, err := a.Fetch(ctx, key, load); err != nil || value(r) != tt.new {
				t.Errorf("A with the link cut: %q, %v; want %q from the source", value(r), err, tt.new)
			}
			// Long enough for the background retry to back off past a
			// second: A's first read after the mend comes before its next
			// try, so only the read's own try can keep the old entry away.
			time.Sleep(1500 * time.Millisecond)
			if n := a.Stats().InvalidationsPending; n != 1 {
				t.Errorf("%d invalidations pending on A with the link cut, want 1", n)
			}
			link.SetDown(false)
			writerReads := func(when string) {
				if r, err := a.Fetch(ctx, key, load); err != nil || value(r) != tt.new {
					t.Errorf("A %s: %q (%v), %v; want %q", when, value(r), r.Status, err, tt.new)
				}
			}
			if tt.writerFirst {
				writerReads("right after the mend")
			}
			var last string
			if !dbtest.Eventually(5*time.Second, func() bool {
				r, err := b.Fetch(ctx, key, load)
				last = value(r)
				return err == nil && last == tt.new
			}) {
				t.Errorf("B 5 s after the mend: %q; want %q (the old entry deleted)", last, tt.new)
			}
			writerReads("at the end")
			if n := a.Stats().InvalidationsPending; n != 0 {
				t.Errorf("%d invalidations still pending on A, want 0", n)
			}
		})
	}
}
