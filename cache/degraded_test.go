package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestRedisDownCapsDirectLoads: with Redis unreachable, 50 concurrent reads
// of 50 different cold keys (so single-flight cannot merge them) reach
// PostgreSQL at most MaxDirectLoads at a time, counted by PostgreSQL itself
// in pg_stat_activity; every read is still answered.
func TestRedisDownCapsDirectLoads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 4
	pool := dbtest.NewPool(t, "cachecap", db.Config{MaxConns: 50})
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	link.SetDown(true)
	rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, MaxDirectLoads: limit})

	tag := "capped_" + dbtest.Unique()
	load := func(ctx context.Context) ([]byte, error) {
		err := pool.With(ctx, func(conn db.Conn) error {
			_, err := conn.Exec(ctx, "SELECT pg_sleep(0.3) /* "+tag+" */")
			return err
		})
		return []byte("v"), err
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // PostgreSQL's own count of the loads running at once
		defer close(sampled)
		for {
			var n int64
			_ = pool.With(ctx, func(conn db.Conn) error {
				return conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%'||$1||' */' AND query NOT LIKE '%pg_stat_activity%'", tag).Scan(&n)
			})
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var ok atomic.Int64
	var wg sync.WaitGroup
	prefix := newPrefix()
	for i := range 50 {
		wg.Go(func() {
			if r, err := c.Fetch(ctx, prefix+"{"+string(rune('a'+i%26))+string(rune('a'+i/26))+"}", load); err == nil && string(r.Value) == "v" {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	if ok.Load() != 50 {
		t.Errorf("%d/50 reads answered with Redis down, want all", ok.Load())
	}
	if p := peak.Load(); p > limit || p == 0 {
		t.Errorf("PostgreSQL saw at most %d loads at once, want between 1 and the cap %d", p, limit)
	}
	t.Logf("peak concurrent loads in PostgreSQL: %d (cap %d)", peak.Load(), limit)
}

// TestLockTierDownReadsStillWork: a Redis user that may read but not write
// (the lock's SET NX is refused, as on a full or read-only Redis) still gets
// every answer: the lock path falls back to a capped direct load.
func TestLockTierDownReadsStillWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := dbtest.NewRedis(t, redisDB)
	user, pass := "reader_"+dbtest.Unique(), dbtest.Unique()
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+pass, "~*", "&*", "+@all", "-set", "-eval", "-evalsha").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	rdb := redis.NewClient(&redis.Options{Addr: dbtest.RedisAddr(), DB: redisDB, Username: user, Password: pass})
	t.Cleanup(func() { _ = rdb.Close() })
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock})
	var calls atomic.Int64
	key := newPrefix() + "{p:1}"
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 20 {
		wg.Go(func() {
			if r, err := c.Fetch(ctx, key, slowLoad(&calls, 100*time.Millisecond, "v")); err == nil && string(r.Value) == "v" {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 20 {
		t.Errorf("%d/20 answered with the lock tier refusing writes, want all", ok.Load())
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d loads, want 1 (single-flight still holds without the lock)", n)
	}
}
