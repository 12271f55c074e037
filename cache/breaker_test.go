package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db/dbtest"
)

// TestRedisBreaker: missing keys never open the breaker; an outage does,
// after which commands fail at once without reaching Redis; when Redis
// returns, a probe closes it again by itself.
func TestRedisBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbtest.NewRedis(t, redisDB) // fails clearly when Redis is down
	proxy := dbtest.NewProxy(t, dbtest.RedisAddr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DB: redisDB, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	const openFor = 300 * time.Millisecond
	b := cache.NewBreaker(3, openFor, 1, nil)
	rdb.AddHook(b)

	key := newPrefix() + "missing"
	for range 10 {
		if err := rdb.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET of a missing key: got %v, want redis.Nil", err)
		}
	}
	if s := b.State(); s != gobreaker.StateClosed {
		t.Fatalf("after 10 misses: got state %s, want closed (a miss is not an outage)", s)
	}

	proxy.SetDown(true)
	for range 3 {
		_ = rdb.Get(ctx, key).Err()
	}
	if s := b.State(); s != gobreaker.StateOpen {
		t.Fatalf("after 3 failures: got state %s, want open", s)
	}
	start := time.Now()
	err := rdb.Get(ctx, key).Err()
	if !errors.Is(err, cache.ErrRedisDown) {
		t.Errorf("GET while open: got %v, want ErrRedisDown", err)
	}
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("GET while open took %s, want immediate (the 200ms read timeout must not apply)", took)
	}

	proxy.SetDown(false)
	time.Sleep(openFor + 50*time.Millisecond)
	if err := rdb.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("probe after recovery: got %v, want redis.Nil", err)
	}
	if s := b.State(); s != gobreaker.StateClosed {
		t.Errorf("after a successful probe: got state %s, want closed", s)
	}
}
