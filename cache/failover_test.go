package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// failoverAddrs are the nodes of a cluster of this test's own (it kills a
// master, which the shared test cluster must not suffer):
// REDIS_FAILOVER_ADDRS, or loopback ports 7121-7126.
func failoverAddrs() []string {
	return rediscluster.AddrsFrom("REDIS_FAILOVER_ADDRS",
		"127.0.0.1:7121,127.0.0.1:7122,127.0.0.1:7123,127.0.0.1:7124,127.0.0.1:7125,127.0.0.1:7126")
}

var processID = regexp.MustCompile(`process_id:(\d+)`)

// TestClusterFailoverRecovers: a master is killed (SIGKILL); while its
// slots are down every Fetch is still answered (loaded directly), and once
// its replica is promoted the cache reads the replicated entry from Redis
// again — without a restart and well before go-redis's periodic 60 s
// topology reload, because ReloadOnOutage reloads on the failures.
func TestClusterFailoverRecovers(t *testing.T) {
	t.Parallel()
	addrs := failoverAddrs()
	dir := filepath.Join(os.TempDir(), "stampede-failover-"+strings.ReplaceAll(addrs[0], ":", "-"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := rediscluster.Start(ctx, dir, addrs); err != nil {
		t.Fatalf("failover cluster: %v", err)
	}
	t.Cleanup(func() { rediscluster.Stop(dir) })

	// The app's client: its settings and its ReloadOnOutage hook.
	client, err := redisconn.Open(redisconn.Config{URL: "redis://", ClusterAddrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	rdb := client.(*redis.ClusterClient)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock})
	key := newPrefix() + "{p:1}"
	var calls atomic.Int64
	load := slowLoad(&calls, 0, "v")
	if _, err := c.Fetch(ctx, key, load); err != nil {
		t.Fatalf("first Fetch: %v", err)
	}

	master, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The replica must hold the entry before its master dies.
	if n, err := master.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
		t.Fatalf("WAIT for the replica: got %d, %v", n, err)
	}
	m := processID.FindStringSubmatch(master.Info(ctx, "server").Val())
	if m == nil {
		t.Fatalf("no process_id from %s", master.Options().Addr)
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill master %s: %v", master.Options().Addr, err)
	}
	killed := time.Now()

	const within = 30 * time.Second // the fix takes seconds; without it, 60 s
	var failed int
	recovered := false
	for time.Since(killed) < within {
		res, err := c.Fetch(ctx, key, load)
		switch {
		case err != nil:
			failed++
		case res.Status == cache.Hit:
			recovered = true
		}
		if recovered {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !recovered {
		t.Fatalf("no read served from Redis within %s of the master's death: the client still routes to the dead node", within)
	}
	t.Logf("served from Redis again %s after the kill; %d loads meanwhile", time.Since(killed).Round(100*time.Millisecond), calls.Load()-1)
	if failed > 0 {
		t.Errorf("%d Fetches failed while the master was down, want 0 (loaded directly)", failed)
	}
}
