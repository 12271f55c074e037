package repo_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
	"github.com/stampede-guard/api/repo"
)

// writeThroughBound is the write-through's own deadline (2 s,
// repo/products.go) plus a margin for the commit on a loaded machine.
const writeThroughBound = 3500 * time.Millisecond

// shortDeadline is a request deadline far inside the write-through's own:
// the answer must not wait past it (much), or the server's write timeout,
// which lies just past REQUEST_TIMEOUT, cuts the answer of a write that
// committed; shortBound is it plus a margin, still short of 2 s.
const shortDeadline, shortBound = 400 * time.Millisecond, 1500 * time.Millisecond

// TestWriteThroughWithRedisDownOrSlow: with Redis down, or slow (1 s per
// call, on a client willing to wait 5 s for an answer), an update commits,
// is reported done within the write-through's own deadline, and the row
// holds the new values: the cache's trouble never fails or holds a write.
// The invalidation is still tried: this instance's L1 copy, read before the
// link broke, is dropped, so its next read answers the new values. Within
// a short request deadline, the write-through ends with the request.
func TestWriteThroughWithRedisDownOrSlow(t *testing.T) {
	tests := []struct {
		name      string
		breakLink func(*netproxy.Proxy)
		deadline  time.Duration // the request's; 0: the test's
		bound     time.Duration
	}{
		{"down", func(l *netproxy.Proxy) { l.SetDown(true) }, 0, writeThroughBound},
		{"slow", func(l *netproxy.Proxy) { l.SetDelay(time.Second) }, 0, writeThroughBound},
		{"slow, within a short request deadline", func(l *netproxy.Proxy) { l.SetDelay(time.Second) }, shortDeadline, shortBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := dbtest.NewPool(t, "repo", db.Config{})
			link := dbtest.NewProxy(t, dbtest.RedisAddr())
			// The app's client honours deadlines (ContextTimeoutEnabled);
			// its I/O timeout is 500 ms, 5 s here, so only the
			// write-through's own deadline can end the wait.
			rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, ContextTimeoutEnabled: true,
				DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
			t.Cleanup(func() { _ = rdb.Close() }) // after the cache's Close, registered later
			c := cache.New(context.Background(), rdb, cache.Config{
				Mode: cache.ModeLock, Channel: "inv:" + dbtest.Unique(), Namespace: dbtest.Namespace(t, redisDB),
				L1TTL: time.Minute, // the old copy outlives the test unless dropped
			}, dbtest.Logger(t))
			t.Cleanup(c.Close)
			t.Cleanup(func() { link.SetDown(false); link.SetDelay(0) }) // before the cache's Close
			products := repo.NewProducts(pool, c, dbtest.Logger(t))
			const id = 7
			if pr, f, err := products.Get(testCtx(t), id); err != nil || pr.Name == "renamed" {
				t.Fatalf("read before the update: %+v, %v; want the old product", pr, err)
			} else if _, f2, _ := products.Get(testCtx(t), id); !f2.L1 {
				t.Fatalf("second read before the update (%+v, then %+v): want it from L1", f, f2)
			}
			tt.breakLink(link)
			ctx := testCtx(t)
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			pr, err := products.Update(ctx, id, repo.ProductUpdate{Name: "renamed", PriceCents: 4242})
			took := time.Since(start)
			if err != nil || pr.Name != "renamed" {
				t.Fatalf("update with Redis %s: %+v, %v; want it done", tt.name, pr, err)
			}
			if took > tt.bound {
				t.Errorf("update with Redis %s took %s, want within %s (the write-through's deadline, or the request's)", tt.name, took.Round(time.Millisecond), tt.bound)
			}
			if got := queryInt(t, pool, `SELECT price_cents FROM products WHERE id = $1`, id); got != 4242 {
				t.Errorf("price in the database: %d, want 4242 (the write stands)", got)
			}
			if pr, f, err := products.Get(testCtx(t), id); err != nil || pr.Name != "renamed" {
				t.Errorf("read after the update with Redis %s: %+v (%+v), %v; want the new name, not the L1 copy", tt.name, pr, f, err)
			}
			t.Logf("update with Redis %s answered in %s", tt.name, took.Round(time.Millisecond))
		})
	}
}

// TestFailedInvalidationsLogOnceASecond: while Redis is away every write's
// invalidation fails, and each is kept to be tried again; the log gets one
// line a second of it, saying how many were left out, not one per write
// (5 342 lines in 23 s in a black-box run with 5 % writes).
func TestFailedInvalidationsLogOnceASecond(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "repo", db.Config{})
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	link.SetDown(true)
	rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs dbtest.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := cache.New(context.Background(), rdb, cache.Config{Mode: cache.ModeLock, Channel: "inv:" + dbtest.Unique(), Namespace: dbtest.Namespace(t, redisDB)}, log)
	t.Cleanup(c.Close)
	t.Cleanup(func() { link.SetDown(false) }) // before the cache's Close
	products := repo.NewProducts(pool, c, log)
	const writes = 40
	start := time.Now()
	for i := range writes {
		if _, err := products.Update(testCtx(t), 7, repo.ProductUpdate{Name: "renamed", PriceCents: int64(100 + i)}); err != nil {
			t.Fatalf("update %d with Redis down: %v", i, err)
		}
	}
	seconds := int(time.Since(start)/time.Second) + 1
	if n := logs.Count("invalidation failed"); n == 0 || n > seconds+1 {
		t.Errorf("%d \"invalidation failed\" lines for %d writes in %d s, want 1 to %d", n, writes, seconds, seconds+1)
	}
}
