package redisconn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestOpenPicksClient: ClusterAddrs selects a cluster client with the
// single-node client's timeouts and retries, and the credentials of URL.
func TestOpenPicksClient(t *testing.T) {
	single, err := redisconn.Open(redisconn.Config{URL: "redis://127.0.0.1:6379/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	cluster, err := redisconn.Open(redisconn.Config{URL: "redis://u:p@127.0.0.1:6379/0", ClusterAddrs: []string{"127.0.0.1:7101"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	so := single.(*redis.Client).Options()
	cc, ok := cluster.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("with ClusterAddrs: got %T, want *redis.ClusterClient", cluster)
	}
	co := cc.Options()
	if co.DialTimeout != so.DialTimeout || co.ReadTimeout != so.ReadTimeout || co.WriteTimeout != so.WriteTimeout ||
		co.PoolTimeout != so.PoolTimeout || co.MaxRetries != so.MaxRetries || co.ContextTimeoutEnabled != so.ContextTimeoutEnabled ||
		co.DialerRetries != so.DialerRetries {
		t.Errorf("cluster options %+v differ from the single client's %+v", co, so)
	}
	if co.Username != "u" || co.Password != "p" {
		t.Errorf("cluster credentials: got %q/%q, want those of URL", co.Username, co.Password)
	}
	if so.DialTimeout != time.Second || so.ReadTimeout != 500*time.Millisecond || so.PoolTimeout != time.Second || so.MaxRetries != 1 {
		t.Errorf("defaults: got dial %s, read %s, pool %s, retries %d; want 1s, 500ms, 1s, 1",
			so.DialTimeout, so.ReadTimeout, so.PoolTimeout, so.MaxRetries)
	}
	if redisconn.TrackingBase(cluster) != nil || redisconn.TrackingBase(single) == nil {
		t.Error("TrackingBase: want options for one server, nil for a cluster")
	}
	if _, err := redisconn.Open(redisconn.Config{URL: "http://127.0.0.1"}); err == nil {
		t.Error("Open with a URL that is not redis://: got nil error")
	}
}

// TestStoppedRedisFailsFast: a command to a port where nothing listens
// fails in about one refused dial per attempt. With go-redis's own dial
// retries (five tries 100 ms apart, per command attempt) it took 0.8 s,
// and every request paid that until the breaker opened. The bound is
// half the old floor; a refused dial takes well under a millisecond.
func TestStoppedRedisFailsFast(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		cfg := redisconn.Config{URL: "redis://127.0.0.1:1/0"} // nothing listens on port 1
		if cluster {
			cfg.ClusterAddrs = []string{"127.0.0.1:1"}
		}
		rdb, err := redisconn.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = rdb.Get(t.Context(), "k").Err()
		took := time.Since(start)
		rdb.Close()
		if err == nil || errors.Is(err, redis.Nil) {
			t.Fatalf("cluster %v: GET with nothing listening: got %v, want a dial error", cluster, err)
		}
		if took > 400*time.Millisecond {
			t.Errorf("cluster %v: GET with nothing listening failed after %s, want at once (one dial per attempt): %v", cluster, took, err)
		}
	}
}

// TestSetLoggerWritesJSON: a line go-redis itself logs (here: a TTL under
// its 1 ms resolution, which it truncates and reports) goes to the slog
// logger as a warning. Not parallel: go-redis's logger is one per process,
// and no parallel test runs (and logs) while this one reads what it wrote.
func TestSetLoggerWritesJSON(t *testing.T) {
	var buf bytes.Buffer
	redisconn.SetLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { redisconn.SetLogger(slog.Default()) })
	rdb := dbtest.NewRedis(t, redisDB)
	prefix := newPrefix()
	t.Cleanup(func() { dbtest.DeletePrefix(t, rdb, prefix) })
	if err := rdb.Set(context.Background(), prefix+"k", "x", 500*time.Microsecond).Err(); err != nil {
		t.Fatalf("SET with a sub-millisecond TTL: %v", err)
	}
	var found bool
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "truncating to 1ms") {
			continue
		}
		found = true
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] != "WARN" || rec["logger"] != "go-redis" {
			t.Errorf("go-redis line %s (%v): want JSON at level WARN, logger go-redis", line, err)
		}
	}
	if !found {
		t.Errorf("go-redis's truncation warning is not in the log:\n%s", buf.String())
	}
}
