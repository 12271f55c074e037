package cache

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// flushDB is the logical database TestTrackingResyncs flushes: not the
// package's, and refused when it holds keys (dbtest.EmptyRedis).
const flushDB = 3

// TestTrackingResyncs: when invalidations may have been missed, L1 is
// flushed, and afterwards tracking works again. FLUSHDB runs on a logical
// database of its own that must start empty; the test deletes its keys.
func TestTrackingResyncs(t *testing.T) {
	ctx := context.Background()
	admin := dbtest.EmptyRedis(t, flushDB)
	tests := []struct {
		name    string
		flushes int64 // at least (a kill: its own, then the resubscription's)
		newConn bool  // the tracking connection is replaced
		trigger func(name string) error
	}{
		{"tracking connection killed", 2, true, func(name string) error {
			id, ok := clientID(t, admin, name)
			if !ok {
				t.Fatalf("no client named %s in CLIENT LIST", name)
			}
			return admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err()
		}},
		{"FLUSHDB", 1, false, func(string) error { return admin.FlushDB(ctx).Err() }},
	}
	for _, tc := range tests {
		prefix := newTestPrefix()
		t.Cleanup(func() { dbtest.DeletePrefix(t, admin, prefix) })
		c, name := trackingCacheOn(t, dbtest.NewRedis(t, flushDB), prefix, 1)
		untouched, key := prefix+"{p:1}", prefix+"{p:2}"
		warm(t, untouched, c)
		flushes, id := c.Stats().L1Flushes, c.tracker.ID()
		t0 := time.Now()
		if err := tc.trigger(name); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		took := evictedWithin(t, trackingBound, t0, untouched, c)
		t.Logf("%s: L1 flushed after %s", tc.name, took)
		if !dbtest.Eventually(2*time.Second, func() bool { return c.Stats().L1Flushes >= flushes+tc.flushes }) {
			t.Fatalf("%s: got L1Flushes %d, want at least %d", tc.name, c.Stats().L1Flushes, flushes+tc.flushes)
		}
		got, ok := clientID(t, admin, name)
		if !ok || got != c.tracker.ID() || (got != id) != tc.newConn {
			t.Errorf("%s: got tracking connection %d (listed %v, tracker says %d), was %d, want replaced %v",
				tc.name, got, ok, c.tracker.ID(), id, tc.newConn)
		}
		warm(t, key, c)
		t0 = time.Now()
		if err := admin.Set(ctx, key, "x", time.Minute).Err(); err != nil {
			t.Fatalf("%s: SET: %v", tc.name, err)
		}
		took = evictedWithin(t, trackingBound, t0, key, c)
		t.Logf("%s: after recovery, L1 dropped a written key after %s", tc.name, took)
	}
}

// TestTrackingRedisDown: with the tracking server unreachable, New waits at
// most about a second, the listener retries with a growing pause rather than
// in a hot loop, and Close still stops it.
func TestTrackingRedisDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	rdb := dbtest.NewRedis(t, redisDB)
	cfg := Config{Mode: ModeLock, L1TTL: time.Minute,
		Tracking: &redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond}}
	t0 := time.Now()
	c := New(context.Background(), rdb, cfg, dbtest.Logger(t))
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("New took %s with tracking down, want about 1s at most", took)
	}
	const watch = 500 * time.Millisecond
	time.Sleep(watch)
	flushes := c.Stats().L1Flushes
	t0 = time.Now()
	c.Close()
	if took := time.Since(t0); took > time.Second {
		t.Errorf("Close took %s, want it prompt", took)
	}
	t.Logf("%d L1 flushes (retries) in %s with tracking down", flushes, watch)
	// Retries at 0, 50, 100, 200, 400 ms...: a handful in watch, not thousands.
	if flushes < 1 || flushes > 10 {
		t.Errorf("got %d L1 flushes (retries) in %s, want 1..10", flushes, watch)
	}
}

// clientID finds the connection named name in CLIENT LIST (server-wide).
func clientID(t *testing.T, rdb *redis.Client, name string) (int64, bool) {
	t.Helper()
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id, err := strconv.ParseInt(v, 10, 64)
				return id, err == nil
			}
		}
	}
	return 0, false
}
