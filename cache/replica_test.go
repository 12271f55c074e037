package cache_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// keyLog is a go-redis hook that records the keys of the GETs a client
// sends.
type keyLog struct {
	mu   sync.Mutex
	keys []string
}

func (h *keyLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *keyLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *keyLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "get" && len(args) == 2 {
			h.mu.Lock()
			h.keys = append(h.keys, args[1].(string))
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// TestReplicaReadsServeOnlyCopies: on the local cluster, with a ReadOnly +
// RouteRandomly client as ReplicaReads, reads of a hot key's copies are
// served by replicas too (counted per node by the client), while the
// entry itself — the lock path's double-check included — is never read
// through that client, and the database is asked once.
func TestReplicaReadsServeOnlyCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := rediscluster.NewClient(t)
	prefix := newPrefix()
	waitReplicasListed(t, rdb, prefix)
	counts := getCounter{prefix: prefix, mu: &sync.Mutex{}, counts: map[string]int{}}
	replicas := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rediscluster.Addrs(), ReadOnly: true, RouteRandomly: true})
	t.Cleanup(func() { _ = replicas.Close() })
	replicas.OnNewNode(func(n *redis.Client) {
		h := counts
		h.addr = n.Options().Addr
		n.AddHook(h)
	})
	var asked keyLog
	replicas.AddHook(&asked)

	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, Copies: 3, ReplicaReads: replicas})
	key := prefix + "{" + dbtest.Unique() + "}"
	var loads atomic.Int64
	load := func(context.Context) ([]byte, error) { loads.Add(1); return []byte("v"), nil }
	t.Cleanup(func() { _ = c.Invalidate(ctx, key) })
	for range 300 {
		if res, err := c.Fetch(ctx, key, load); err != nil || string(res.Value) != "v" {
			t.Fatalf("Fetch: got %q, %v, want %q", res.Value, err, "v")
		}
	}
	if got := loads.Load(); got != 1 {
		t.Errorf("got %d loads, want 1", got)
	}

	var replicaAddrs []string
	var mu sync.Mutex
	if err := rdb.ForEachSlave(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		replicaAddrs = append(replicaAddrs, n.Options().Addr)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	onReplicas := 0
	counts.mu.Lock()
	for _, a := range replicaAddrs {
		onReplicas += counts.counts[a]
	}
	t.Logf("copy GETs per node through the replica client: %v (replicas %v)", counts.counts, replicaAddrs)
	counts.mu.Unlock()
	// About 300 × 2/3 copy reads, half of them on a replica.
	if onReplicas < 30 {
		t.Errorf("replicas served %d of the copies' reads, want about 100", onReplicas)
	}
	asked.mu.Lock()
	defer asked.mu.Unlock()
	if len(asked.keys) == 0 {
		t.Fatal("the replica client was never asked")
	}
	for _, k := range asked.keys {
		if k == key {
			t.Fatalf("the entry %s was read through the replica client: only copies may be", key)
		}
	}
}

// waitReplicasListed writes to every master and waits until CLUSTER SLOTS
// lists a replica for every slot range. Redis 7 leaves out of CLUSTER
// SLOTS a replica whose replication offset is still 0 (nothing written
// since the cluster formed), and go-redis routes only to the nodes listed
// there when it loads the cluster's state.
func waitReplicasListed(t *testing.T, rdb *redis.ClusterClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	for i := range 30 {
		k := prefix + "warm{" + strconv.Itoa(i) + "}"
		if err := rdb.Set(ctx, k, "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(ctx, k) })
	}
	listed := dbtest.Eventually(20*time.Second, func() bool {
		//lint:ignore SA1019 go-redis builds its routing from CLUSTER SLOTS: wait for what it will see
		slots, err := rdb.ClusterSlots(ctx).Result()
		if err != nil || len(slots) == 0 {
			return false
		}
		for _, s := range slots {
			if len(s.Nodes) < 2 {
				return false
			}
		}
		return true
	})
	if !listed {
		t.Fatal("CLUSTER SLOTS lists no replica for some slot range after 20 s")
	}
}
