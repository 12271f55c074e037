package cache_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// getCounter is a go-redis hook counting, per node, the GETs of keys under
// one prefix: this test's reads only, whatever else runs on the cluster.
type getCounter struct {
	addr   string
	prefix string
	mu     *sync.Mutex
	counts map[string]int
}

func (h getCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h getCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h getCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "get" && len(args) == 2 && strings.HasPrefix(args[1].(string), h.prefix) {
			h.mu.Lock()
			h.counts[h.addr]++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// getCalls reads every master's INFO commandstats GET count.
func getCalls(t *testing.T, rdb *redis.ClusterClient) map[string]int {
	t.Helper()
	out, err := rediscluster.MasterGets(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCopiesSpreadOverMasters: with 3 copies on the 3-master cluster, each
// hot key's reads land on all 3 masters, each within ±20 % of an even
// share, counted by the client per node and confirmed by each master's own
// INFO commandstats. Several keys, each checked alone: random copy tags
// put most keys' copies on only two masters.
func TestCopiesSpreadOverMasters(t *testing.T) {
	const (
		copies  = 3
		keys    = 4
		perKey  = 1500
		masters = 3
	)
	ctx := context.Background()
	prefix := newPrefix()
	counts := getCounter{prefix: prefix, mu: &sync.Mutex{}, counts: map[string]int{}}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: rediscluster.Addrs(),
		NewClient: func(opt *redis.Options) *redis.Client {
			c := redis.NewClient(opt)
			h := counts
			h.addr = opt.Addr
			c.AddHook(h)
			return c
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	admin := rediscluster.NewClient(t)
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, Copies: copies})
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	var names []string
	for i := range keys {
		k := prefix + "{p:" + strconv.Itoa(i) + "}"
		names = append(names, k)
		if _, err := c.Fetch(ctx, k, load); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, k := range keysMatching(t, admin, prefix+"*") {
			admin.Del(ctx, k)
		}
	})
	share := perKey / masters
	for _, k := range names {
		counts.mu.Lock()
		clear(counts.counts)
		counts.mu.Unlock()
		before := getCalls(t, admin)
		for range perKey {
			if res, err := c.Fetch(ctx, k, load); err != nil || string(res.Value) != "v" {
				t.Fatalf("Fetch %s: got %q, %v", k, res.Value, err)
			}
		}
		after := getCalls(t, admin)
		if len(after) != masters {
			t.Fatalf("got %d masters, want %d", len(after), masters)
		}
		for addr := range after {
			client, server := counts.counts[addr], after[addr]-before[addr]
			t.Logf("%s on master %s: %d GETs (client count), INFO commandstats cmdstat_get +%d", k, addr, client, server)
			if client < share*8/10 || client > share*12/10 {
				t.Errorf("%s: master %s served %d of its %d GETs, want %d ± 20%%", k, addr, client, perKey, share)
			}
			// The server's count includes other tests' GETs, so it can
			// only be checked from below.
			if server < share*8/10 {
				t.Errorf("%s: master %s: INFO commandstats counted %d GETs, want at least %d", k, addr, server, share*8/10)
			}
		}
	}
	if got := c.Stats().Loads; got != keys {
		t.Errorf("got %d loads, want %d (one per key)", got, keys)
	}
}
