package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/middleware"
)

// TestLimitWindowEndReadsTheCounter: limitWindowEnd asks Redis for the
// very counter ulule's store keeps (its key name is ulule's business: a
// wrong guess would fall back, unnoticed, to ending the window up to a
// second late), and a spent budget's Retry-After is then the window's own
// time left, to the millisecond.
func TestLimitWindowEndReadsTheCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	ns := dbtest.Namespace(t, redisDB) + ":"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := middleware.NewLeaseStore(newLimitStore(rdb, ns, log), 0.01, 100).WithWindowEnd(limitWindowEnd(rdb, ns))
	rate := limiter.Rate{Period: time.Minute, Limit: 2}
	key := "203.0.113.9"
	for i := range 3 {
		lctx, err := store.Get(ctx, key, rate)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 2; lctx.Reached != want {
			t.Fatalf("request %d: reached %v, want %v", i+1, lctx.Reached, want)
		}
	}
	at, ok := store.RetryAt(key)
	if !ok {
		t.Fatal("RetryAt: the spent budget's window end is not known")
	}
	// The counter's own time left, read the way ulule names it.
	ttl, err := rdb.PTTL(ctx, ns+"ratelimit:60s:"+key).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("PTTL of ulule's counter: %v, %v (is the key name right?)", ttl, err)
	}
	if d := time.Until(at) - ttl; d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("window ends in %s, the counter's TTL is %s: want them within 50 ms", time.Until(at), ttl)
	}
}

// TestLimitStoreIsBuiltAtStart: the shared rate-limit store is built (its
// scripts loaded in Redis) when the app wires it, not by the first limited
// request, which with a hung Redis would wait two I/O timeouts for it
// beyond its own deadline.
func TestLimitStoreIsBuiltAtStart(t *testing.T) {
	t.Parallel()
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_ = newLimitStore(rdb, dbtest.Namespace(t, redisDB)+":", log)
	if n := link.Stats().Conns; n == 0 {
		t.Fatal("newLimitStore returned without reaching Redis: the first limited request would build the store")
	}
}
