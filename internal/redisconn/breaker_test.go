package redisconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// guardedRedis is a client to the test Redis through a proxy the test can
// cut, guarded by a Redis breaker that records its transitions.
func guardedRedis(t *testing.T, cfg breaker.Config) (*redis.Client, *redisconn.Breaker, *dbtest.Transitions, interface{ SetDown(bool) }) {
	t.Helper()
	dbtest.NewRedis(t, redisDB) // fails clearly when Redis is down
	proxy := dbtest.NewProxy(t, dbtest.RedisAddr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DB: redisDB, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	tr := &dbtest.Transitions{}
	cfg.OnStateChange = tr.Record
	b := redisconn.NewBreaker(rdb, cfg)
	t.Cleanup(b.Close) // before rdb.Close: the probe uses rdb
	return rdb, b, tr, proxy
}

// TestRedisBreaker: missing keys never open the breaker; an outage does,
// after which commands fail at once without reaching Redis; while Redis is
// away the breaker probes with backoff; the first probe after Redis returns
// closes it, with no user command needed.
func TestRedisBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, b, tr, proxy := guardedRedis(t, breaker.Config{Failures: 3, OpenMin: 50 * time.Millisecond, OpenMax: 400 * time.Millisecond})

	key := newPrefix() + "missing"
	for range 10 {
		if err := rdb.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET of a missing key: got %v, want redis.Nil", err)
		}
	}
	if s := b.State(); s != breaker.Closed {
		t.Fatalf("after 10 misses: got state %s, want closed (a miss is not an outage)", s)
	}

	proxy.SetDown(true)
	for range 3 {
		_ = rdb.Get(ctx, key).Err()
	}
	if s := b.State(); s == breaker.Closed {
		t.Fatalf("after 3 failures: got state %s, want open", s)
	}
	start := time.Now()
	err := rdb.Get(ctx, key).Err()
	if !errors.Is(err, redisconn.ErrBreakerOpen) {
		t.Errorf("GET while open: got %v, want ErrBreakerOpen", err)
	}
	// Any time under the 200 ms read timeout shows it did not apply; the
	// margin is for a starved machine (CI beside CPU burners), not for I/O.
	if took := time.Since(start); took >= 150*time.Millisecond {
		t.Errorf("GET while open took %s, want well under the 200ms read timeout (it must not apply)", took)
	}
	// Let a few probes fail, so the schedule has backed off.
	dbtest.WaitFor(t, "3 failed probes", func() bool { return b.Snapshot().FailedProbes >= 3 })

	proxy.SetDown(false)
	back := time.Now()
	// No user command: the breaker recovers by itself.
	dbtest.WaitFor(t, "breaker closed", func() bool { return b.State() == breaker.Closed })
	probe, result, ok := tr.FirstProbeAfter(back)
	if !ok || result != breaker.Closed {
		t.Fatalf("first probe after Redis returned: ended in %s (ok %v), want closed; transitions:%s", result, ok, tr)
	}
	t.Logf("Redis back → first probe +%s → closed +%s (%d probes in all)",
		probe.Sub(back).Round(time.Millisecond), time.Since(back).Round(time.Millisecond), tr.Probes())
	if err := rdb.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET after recovery: got %v, want redis.Nil", err)
	}
}

// TestRedisBreakerIgnoresCancellations: a caller that cancels between two
// timeouts neither counts as a failure nor resets the failure streak, so
// the breaker still opens on the third real failure.
func TestRedisBreakerIgnoresCancellations(t *testing.T) {
	t.Parallel()
	rdb, b, _, proxy := guardedRedis(t, breaker.Config{Failures: 3, OpenMin: time.Minute})
	key := newPrefix() + "k"
	proxy.SetDown(true)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i, ctx := range []context.Context{context.Background(), context.Background(), cancelled, cancelled, context.Background()} {
		err := rdb.Get(ctx, key).Err()
		if ctx == cancelled && !errors.Is(err, context.Canceled) {
			t.Fatalf("call %d with a cancelled context: got %v, want context.Canceled", i, err)
		}
	}
	if s := b.State(); s != breaker.Open {
		t.Errorf("after failure, failure, 2 cancellations, failure: got %s, want open (cancellations are excluded)", s)
	}
}
