package cache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestL1BoundsLostInvalidations stages what the fail-mode matrix says of
// pub/sub invalidation: a write made while instance B's subscription is cut
// (down), or before its resubscription has crossed a slow link (slow),
// never reaches B, so only B's L1 TTL stands between it and the new value.
// B serves its old copy right after the write (the message is lost, not
// late) and never once its L1 TTL has run out.
func TestL1BoundsLostInvalidations(t *testing.T) {
	const l1TTL = 2 * time.Second
	tests := []struct {
		name string
		// cut runs before A's write, mend after it.
		cut, mend func(*netproxy.Proxy)
	}{
		{"down", func(l *netproxy.Proxy) { l.SetDown(true) }, func(l *netproxy.Proxy) { l.SetDown(false) }},
		// Cut and mended at once, but every command crossing it (the
		// resubscription's SUBSCRIBE too) arrives 5 s late: longer than
		// A's write takes on any machine.
		{"slow", func(l *netproxy.Proxy) { l.SetDown(true); l.SetDelay(5 * time.Second); l.SetDown(false) }, func(*netproxy.Proxy) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := cache.Config{Mode: cache.ModeLock, L1TTL: l1TTL, Channel: "inv:" + dbtest.Unique()}
			a := newCache(t, dbtest.NewRedis(t, redisDB), cfg)
			link := dbtest.NewProxy(t, dbtest.RedisAddr())
			rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1,
				DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
			t.Cleanup(func() { _ = rdb.Close() }) // after B's Close, registered later
			b := newCache(t, rdb, cfg)
			t.Cleanup(func() { link.SetDown(false); link.SetDelay(0) }) // before B's Close

			// The channel works: an invalidation reaches B before the cut.
			prefix := newPrefix()
			if err := a.Invalidate(ctx, prefix+"{probe}"); err != nil {
				t.Fatalf("probe invalidation: %v", err)
			}
			if !dbtest.Eventually(5*time.Second, func() bool { return b.Stats().L1Invalidations > 0 }) {
				t.Fatalf("B never heard the probe invalidation (else this test proves nothing)")
			}
			heard := b.Stats().L1Invalidations

			var current atomic.Value // what the database holds
			current.Store("old")
			load := func(context.Context) ([]byte, error) { return []byte(current.Load().(string)), nil }
			key := prefix + "{p:1}"
			fillStart := time.Now()
			if _, err := b.Fetch(ctx, key, load); err != nil {
				t.Fatalf("B's first read: %v", err)
			}
			if res, err := b.Fetch(ctx, key, load); err != nil || !res.L1 || string(res.Value) != "old" {
				t.Fatalf("B's second read: %q L1=%v %v, want %q from L1", res.Value, res.L1, err, "old")
			}
			filled := time.Now() // B's L1 copy expires between fillStart+l1TTL and filled+l1TTL

			tt.cut(link)
			current.Store("new")
			if err := a.Set(ctx, key, []byte("new")); err != nil {
				t.Fatalf("A's write: %v", err)
			}
			tt.mend(link)

			deadline := filled.Add(l1TTL + 10*time.Second)
			for first := true; ; first = false {
				start := time.Now()
				res, err := b.Fetch(ctx, key, load)
				got := string(res.Value)
				switch {
				case err == nil && got == "new":
				case got == "old" && start.After(filled.Add(l1TTL)):
					t.Fatalf("B served the old value %s after its L1 copy was filled, past L1TTL %s",
						start.Sub(filled).Round(time.Millisecond), l1TTL)
				case time.Now().After(deadline):
					t.Fatalf("B: got %q, %v; want %q by %s after the fill", got, err, "new", deadline.Sub(filled))
				}
				if first && start.Before(fillStart.Add(l1TTL)) && got != "old" {
					t.Errorf("B's first read after the write: %q, want %q from L1 (the invalidation is lost)", got, "old")
				}
				if got == "new" {
					t.Logf("B served the new value %s after its fill (L1TTL %s)", start.Sub(filled).Round(time.Millisecond), l1TTL)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := b.Stats().L1Invalidations; got != heard {
				t.Errorf("B heard %d invalidations after the cut, want 0 (else none was lost)", got-heard)
			}
		})
	}
}
