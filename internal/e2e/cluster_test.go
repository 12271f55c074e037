package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// TestAppOnCluster: the binary, given REDIS_CLUSTER_ADDRS, caches in the
// cluster (a miss, then a hit, the entry and its copies on their slots),
// and its console lists lock keys held on every master.
func TestAppOnCluster(t *testing.T) {
	env := testEnv(t)
	env["REDIS_CLUSTER_ADDRS"] = strings.Join(rediscluster.Addrs(), ",")
	delete(env, "CACHE_NAMESPACE")          // the documented key names; ids of its own keep it apart
	env["REDIS_URL"] = dbtest.RedisDBURL(0) // credentials only: a cluster has database 0 alone
	env["HOT_KEY_COPIES"] = "3"
	env["HOT_KEY_DETECT"] = "false" // copies of every key, not only of hot ones
	env["L1_TTL"] = "1s"
	a := launchApp(t, env)
	base := a.waitListening()
	rdb := rediscluster.NewClient(t)
	ctx := context.Background()

	// An id no other test uses: the cluster is shared and has no logical
	// databases to keep tests apart.
	id := 2_000_000 + rand.IntN(1_000_000_000)
	key := fmt.Sprintf("product:v1:{%d}", id)
	t.Cleanup(func() {
		for _, k := range keysOnMasters(t, rdb, fmt.Sprintf("product:v1:{%d*", id)) {
			rdb.Del(ctx, k)
		}
	})
	for i, want := range []string{"MISS", "HIT"} {
		resp, body := call(t, "GET", fmt.Sprintf("%s/products/%d", base, id), nil, "")
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Cache") != want {
			t.Fatalf("GET #%d: got %d %s %s, want 404 with X-Cache %s", i+1, resp.StatusCode, resp.Header.Get("X-Cache"), body, want)
		}
	}
	if n := rdb.Exists(ctx, key).Val(); n != 1 {
		t.Errorf("entry %s in the cluster: got %d, want 1", key, n)
	}
	if got := keysOnMasters(t, rdb, fmt.Sprintf("product:v1:{%d*", id)); len(got) != 3 {
		t.Errorf("entry and copies: got %q, want 3 keys", got)
	}

	// One lock on each master: the listing must scan them all.
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	feed := fmt.Sprintf("http://%s/api/state", admin[0]["addr"])
	u := dbtest.Unique()
	var locks []string
	masters := map[string]bool{}
	for i := 0; len(masters) < 3 && i < 1000; i++ {
		k := fmt.Sprintf("lock:product:v1:{%s-%d}", u, i)
		n, err := rdb.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if masters[n.Options().Addr] {
			continue
		}
		masters[n.Options().Addr] = true
		if err := rdb.Set(ctx, k, "token", 20*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(ctx, k) })
		locks = append(locks, k)
	}
	if len(masters) != 3 {
		t.Fatalf("placed locks on %d masters, want 3", len(masters))
	}
	for _, k := range locks {
		if ttl, found := lockTTL(t, feed, k); !found || ttl <= 0 {
			t.Errorf("lock %s held on the cluster: found %v (ttl %d ms) in the console feed, want listed", k, found, ttl)
		}
	}
}

// keysOnMasters lists keys matching pattern on every master.
func keysOnMasters(t *testing.T, rdb *redis.ClusterClient, pattern string) []string {
	t.Helper()
	var keys []string
	var mu = make(chan struct{}, 1)
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		found, err := n.Keys(ctx, pattern).Result()
		mu <- struct{}{}
		keys = append(keys, found...)
		<-mu
		return err
	})
	if err != nil {
		t.Fatalf("keys %s: %v", pattern, err)
	}
	return keys
}
