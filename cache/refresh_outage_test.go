package cache_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestRefreshAheadSkipsWhileRedisFails: with Redis down, or slower than the
// client's I/O timeout, the refresh-ahead job cannot set its period marker
// and skips the period: no instance reloads the hot keys into a cache that
// could not store them (a wasted query per key, per period, per instance).
// When Redis answers again the job runs again, without a restart.
func TestRefreshAheadSkipsWhileRedisFails(t *testing.T) {
	const period = 200 * time.Millisecond
	tests := []struct {
		name      string
		breakLink func(*netproxy.Proxy)
		heal      func(*netproxy.Proxy)
	}{
		{"down", func(l *netproxy.Proxy) { l.SetDown(true) }, func(l *netproxy.Proxy) { l.SetDown(false) }},
		{"slow", func(l *netproxy.Proxy) { l.SetDelay(2 * time.Second) }, func(l *netproxy.Proxy) { l.SetDelay(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			link, err := netproxy.New(dbtest.RedisAddr(), netproxy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(link.Close)
			// The app's client gives up on a slow Redis after its I/O
			// timeout (internal/redisconn); 200 ms here.
			rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { _ = rdb.Close() }) // after the cache's Close, registered later
			prefix := newPrefix()
			keys := []string{prefix + "{h:1}", prefix + "{h:2}"}
			var calls atomic.Int64
			c := newCache(t, rdb, cache.Config{Mode: cache.ModeSWR})
			tt.breakLink(link)
			c.StartRefreshAhead("job-"+prefix, period, keys, func(string) cache.LoadFunc { return slowLoad(&calls, 0, "v") })
			time.Sleep(6 * period)
			if got := calls.Load(); got != 0 {
				t.Errorf("reloads with Redis %s over 6 periods: got %d, want 0 (the period skipped)", tt.name, got)
			}
			tt.heal(link)
			if !dbtest.Eventually(10*time.Second, func() bool { return calls.Load() > 0 }) {
				t.Errorf("no reload within 10 s of Redis answering again: the job did not resume")
			}
		})
	}
}
