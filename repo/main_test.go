package repo_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestMain fails the package if a test leaves a goroutine behind: a pool, a
// Redis client or a cache that a cleanup did not close. No goroutine is
// ignored: dbtest closes the pools and the Redis clients it opens, and every
// cache built here is closed by its test's cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// redisDB is the logical Redis database of this package's tests. Each
// cache is in a namespace of its own (deleted when the test ends), so no
// key of anyone else is read or deleted.
const redisDB = 2

// testTimeout bounds every call a test makes, so a hang fails the test with
// a message instead of hitting the global go test timeout.
const testTimeout = 30 * time.Second

// testCtx returns a context that ends with the test or after testTimeout.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newCache builds a lock-mode cache on Redis DB 2, with an invalidation
// channel of its own, closed when the test ends (before the Redis client,
// whose cleanup dbtest registered first).
func newCache(t testing.TB) *cache.Cache {
	t.Helper()
	rdb := dbtest.NewRedis(t, redisDB)
	c := cache.New(context.Background(), rdb, cache.Config{
		Mode:      cache.ModeLock,
		Channel:   "inv:" + dbtest.Unique(),
		Namespace: dbtest.Namespace(t, redisDB),
	}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	return c
}

// newProducts opens a fresh seeded database with cfg and a products
// repository on it, and forgets the cached entries of ids, so an entry that
// an earlier run (-count=N) or another database left in Redis cannot answer
// for this test's database.
func newProducts(t testing.TB, cfg db.Config, ids ...int64) (*repo.Products, *cache.Cache, *db.Pool) {
	t.Helper()
	pool := dbtest.NewPool(t, "repo", cfg)
	c := newCache(t)
	forget(t, c, ids...)
	return repo.NewProducts(pool, c, dbtest.Logger(t)), c, pool
}

// forget deletes the cached entries of ids.
func forget(t testing.TB, c *cache.Cache, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if err := c.Invalidate(testCtx(t), repo.Key(id)); err != nil {
			t.Fatalf("invalidate product %d: %v", id, err)
		}
	}
}

// queryInt runs a query that returns one integer, straight on the database
// (through the pool's guarded path, past the cache).
func queryInt(t testing.TB, pool *db.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	ctx := testCtx(t)
	if err := pool.With(ctx, func(conn db.Conn) error { return conn.QueryRow(ctx, sql, args...).Scan(&n) }); err != nil {
		t.Fatalf("%s %v: %v", sql, args, err)
	}
	return n
}

// exec runs a statement straight on the database (through the pool's
// guarded path, past the cache).
func exec(t testing.TB, pool *db.Pool, sql string, args ...any) {
	t.Helper()
	ctx := testCtx(t)
	if err := pool.With(ctx, func(conn db.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}); err != nil {
		t.Fatalf("%s %v: %v", sql, args, err)
	}
}
