package cache_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestNamespacesKeepAppsApart: two apps on one Redis database, each a fleet
// of two instances, differ only in Namespace. A cold key is loaded once per
// app (they never share an entry or a lock), every key each app leaves
// starts with its namespace, and a write in one app never evicts the other
// app's L1.
func TestNamespacesKeepAppsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := "t" + dbtest.Unique()
	admin := dbtest.NewRedis(t, redisDB)
	apps := map[string][]*cache.Cache{}
	for _, ns := range []string{base + "-a", base + "-b"} {
		cfg := cache.Config{Mode: cache.ModeLock, L1TTL: 5 * time.Second, Namespace: ns, Copies: 2}
		apps[ns] = []*cache.Cache{
			cache.New(ctx, dbtest.NewRedis(t, redisDB), cfg, dbtest.Logger(t)),
			cache.New(ctx, dbtest.NewRedis(t, redisDB), cfg, dbtest.Logger(t)),
		}
		for _, c := range apps[ns] {
			t.Cleanup(c.Close)
		}
	}
	const key = "product:v1:{7}"
	loads := map[string]*atomic.Int64{}
	for ns := range apps {
		loads[ns] = &atomic.Int64{}
	}
	var wg sync.WaitGroup
	for ns, fleet := range apps {
		for _, c := range fleet {
			for range 20 {
				wg.Go(func() {
					load := func(ctx context.Context) ([]byte, error) {
						// The loader holds the lock now: it must carry the namespace.
						if n := admin.Exists(ctx, ns+":lock:"+key).Val(); n != 1 {
							t.Errorf("%s: lock %q not found while loading", ns, ns+":lock:"+key)
						}
						return slowLoad(loads[ns], 100*time.Millisecond, ns)(ctx)
					}
					if _, err := c.Fetch(ctx, key, load); err != nil {
						t.Errorf("%s: fetch: %v", ns, err)
					}
				})
			}
		}
	}
	wg.Wait()
	for ns := range apps {
		if got := loads[ns].Load(); got != 1 {
			t.Errorf("%s: %d loads, want 1 per app (not shared across apps, shared within)", ns, got)
		}
		keys := scanKeys(t, admin, ns+":*")
		if len(keys) == 0 {
			t.Errorf("%s: no key starts with %q", ns, ns+":")
		}
		for _, k := range keys {
			if strings.Contains(k, "lock:") {
				t.Errorf("%s: lock key %q left behind", ns, k)
			}
		}
	}
	// Every instance now holds its app's value in L1. A write in app a must
	// reach a's other instance and no instance of b.
	a, b := apps[base+"-a"], apps[base+"-b"]
	for _, c := range b {
		if r, _ := c.Fetch(ctx, key, nil); !r.L1 {
			t.Fatalf("b before the write: not served from L1, so this test would prove nothing")
		}
	}
	if err := a[0].Set(ctx, key, []byte("new-a")); err != nil {
		t.Fatalf("Set in a: %v", err)
	}
	if !dbtest.Eventually(2*propagation, func() bool {
		r, _ := a[1].Fetch(ctx, key, nil)
		return string(r.Value) == "new-a"
	}) {
		t.Errorf("a's other instance never saw a's write")
	}
	time.Sleep(100 * time.Millisecond) // any stray message has arrived by now
	for i, c := range b {
		if r, _ := c.Fetch(ctx, key, nil); !r.L1 || string(r.Value) != base+"-b" {
			t.Errorf("b[%d] after a's write: got %q (L1 %v), want its own value from L1", i, r.Value, r.L1)
		}
	}
}
