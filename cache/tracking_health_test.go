package cache

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestTrackingSilentConnection: the tracking connection goes silent with no
// error (what a half-open TCP link looks like: here the proxy holds every
// byte the client sends). The listener's unanswered health ping must flush
// L1 within a few seconds and, once the link works again, a new connection
// must carry invalidations.
func TestTrackingSilentConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(dbtest.RedisURL())
	if err != nil {
		t.Fatalf("parse REDIS_URL: %v", err)
	}
	link, err := netproxy.New(u.Host, netproxy.Options{})
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(link.Close)

	rdb := dbtest.NewRedis(t, redisDB)
	opt := *rdb.Options()
	opt.Addr = link.Addr()
	opt.ClientName = "t" + dbtest.Unique() + ":l1-tracking"
	prefix := newTestPrefix()
	c := New(ctx, rdb, Config{Mode: ModeLock, L1TTL: time.Minute, Tracking: &opt, TrackPrefixes: []string{prefix}},
		dbtest.Logger(t))
	t.Cleanup(c.Close)
	key := prefix + "{p:1}"
	warm(t, key, c)
	flushes := c.Stats().L1Flushes

	link.SetDelay(time.Hour) // silent: nothing the client sends arrives
	t0 := time.Now()
	took := evictedWithin(t, 5*trackHealthEvery, t0, key, c) // ~2 s; room for a loaded machine
	t.Logf("silent tracking connection: L1 flushed after %s (health ping every %s)", took, trackHealthEvery)
	if got := c.Stats().L1Flushes; got <= flushes {
		t.Errorf("L1Flushes: got %d, want more than %d", got, flushes)
	}

	// Stay silent a while longer, so the replacement connection hangs too
	// and the listener must get past a failed reconnect.
	time.Sleep(2 * trackHealthEvery)
	link.SetDelay(0)
	t0 = time.Now()
	plain := dbtest.NewRedis(t, redisDB)
	if !dbtest.Eventually(15*time.Second, func() bool {
		warm(t, key, c)
		began := time.Now()
		if err := plain.Set(ctx, key, "x", time.Minute).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		return dbtest.Eventually(trackingBound, func() bool { return !inL1(c, key) }) && time.Since(began) <= trackingBound
	}) {
		t.Fatalf("after the link came back, a SET never evicted %s within %s", key, trackingBound)
	}
	t.Logf("tracking recovered %s after the link came back", time.Since(t0))
}
