package rediscluster_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(rediscluster.Main(m)) }

// TestClusterFormed: the helper's cluster has three masters over all 16384
// slots, each with one replica, and a key written through it reads back.
func TestClusterFormed(t *testing.T) {
	rdb := rediscluster.NewClient(t)
	ctx := context.Background()
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	slots := 0
	for _, s := range shards {
		for _, r := range s.Slots {
			slots += int(r.End - r.Start + 1)
		}
		roles := map[string]int{}
		for _, n := range s.Nodes {
			roles[n.Role]++
		}
		if len(s.Slots) > 0 && (roles["master"] != 1 || roles["replica"] != 1) {
			t.Errorf("shard %v: got roles %v, want one master and one replica", s.Slots, roles)
		}
	}
	if slots != 16384 {
		t.Errorf("got %d slots served, want 16384", slots)
	}
	if len(shards) != 3 {
		t.Errorf("got %d shards, want 3", len(shards))
	}
	key := "t" + strings.ReplaceAll(t.Name(), "/", "_") + ":{x}"
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	defer rdb.Del(ctx, key)
	if got := rdb.Get(ctx, key).Val(); got != "v" {
		t.Errorf("GET: got %q, want %q", got, "v")
	}
}

// TestMasterGets: every master is counted, and a GET through the cluster
// shows on the master that serves its slot (other test binaries may share
// the cluster, so counts only ever grow by at least what this test sent).
func TestMasterGets(t *testing.T) {
	rdb := rediscluster.NewClient(t)
	ctx := context.Background()
	key := "t" + strings.ReplaceAll(t.Name(), "/", "_") + ":{y}"
	master, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		t.Fatalf("master for %s: %v", key, err)
	}
	before, err := rediscluster.MasterGets(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	const reads = 5
	for range reads {
		rdb.Get(ctx, key) // a miss is still a GET
	}
	after, err := rediscluster.MasterGets(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 {
		t.Errorf("got counts of %d masters (%v), want 3", len(after), after)
	}
	addr := master.Options().Addr
	if got := after[addr] - before[addr]; got < reads {
		t.Errorf("master %s: got %d more GETs, want at least %d (before %v, after %v)", addr, got, reads, before, after)
	}
}
