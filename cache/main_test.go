package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// background refresh, a shared load, or an invalidation listener that Close
// did not stop. The local Redis Cluster is up for the whole package.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(rediscluster.Main(m))
}

// redisDB is the logical Redis database this package's tests use.
const redisDB = 1

// newPrefix returns a key prefix of the test's own, so tests can run in
// parallel on one Redis database without seeing each other's keys.
func newPrefix() string { return "t" + dbtest.Unique() + ":" }

// newCache builds a Cache on rdb, on an invalidation channel of its own
// unless cfg names one, and closes it when the test ends (before rdb, which
// dbtest closes in an earlier-registered cleanup).
func newCache(t testing.TB, rdb redis.UniversalClient, cfg cache.Config) *cache.Cache {
	t.Helper()
	if cfg.Channel == "" {
		cfg.Channel = "inv:" + dbtest.Unique()
	}
	c := cache.New(context.Background(), rdb, cfg, dbtest.Logger(t))
	t.Cleanup(c.Close)
	return c
}

// slowLoad counts its calls in calls, takes d (or less if ctx ends first, as
// a database query would) and returns value.
func slowLoad(calls *atomic.Int64, d time.Duration, value string) cache.LoadFunc {
	return func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return []byte(value), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// allReturnWhileHeld waits for the readers in wg while the load behind
// gate is still held back, and fails the test (what names the readers) if
// they do not all return within 10 s; gate is closed first then, so no
// reader is left behind.
func allReturnWhileHeld(t *testing.T, wg *sync.WaitGroup, gate chan struct{}, what string) {
	t.Helper()
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		close(gate)
		<-returned
		t.Fatalf("%s: not all returned within 10 s while the refresh was pending, want all at once", what)
	}
}

// scanKeys lists the keys matching pattern.
func scanKeys(t testing.TB, rdb *redis.Client, pattern string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(context.Background(), 0, pattern, 1000).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan %s: %v", pattern, err)
	}
	return keys
}
