package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestStaticKeysThroughASlowRedis: a static key lost from Redis (a
// restart) while Redis turns slow, 2 s a call against the client's 200 ms
// I/O timeout: every read of the static keys is still answered, with the
// source's value, well within a second; once Redis answers again the
// repair job stores the lost key again, static (no expiry to speak of).
func TestStaticKeysThroughASlowRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := dbtest.NewRedis(t, redisDB)
	link, err := netproxy.New(dbtest.RedisAddr(), netproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() }) // after the cache's Close, registered later
	prefix := newPrefix()
	keys := []string{prefix + "{s:1}", prefix + "{s:2}"}
	src := newSource()
	for _, k := range keys {
		src.set(k, "truth-"+k)
	}
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeSWR, Static: keys})
	t.Cleanup(func() { link.SetDelay(0) }) // before the cache's Close
	if n, err := c.Warm(ctx, keys, src.loader, 100, 10); err != nil || n != len(keys) {
		t.Fatalf("warm: %d, %v", n, err)
	}
	if err := direct.Del(ctx, keys[0]).Err(); err != nil { // lost in a restart
		t.Fatal(err)
	}
	const period = 200 * time.Millisecond
	c.StartRepair("repair-"+prefix, period, src.loader)
	link.SetDelay(2 * time.Second)
	for i := range 10 {
		k := keys[i%len(keys)]
		start := time.Now()
		r, err := c.Fetch(ctx, k, src.loader(k))
		if took := time.Since(start); err != nil || string(r.Value) != "truth-"+k || took > time.Second {
			t.Errorf("read %d of %s with Redis slow: %q, %v after %s; want its value within 1s", i, k, r.Value, err, took.Round(time.Millisecond))
		}
	}
	link.SetDelay(0)
	restored := func() bool {
		v := direct.Get(ctx, keys[0]).Val() // an envelope around the value
		return direct.PTTL(ctx, keys[0]).Val() > time.Hour && strings.Contains(v, "truth-"+keys[0])
	}
	if !dbtest.Eventually(5*time.Second, restored) {
		t.Errorf("%s not stored again by the repair job within 5 s of Redis answering", keys[0])
	}
}
