package cache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/cache/internal/redislock"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// backend is one kind of Redis the cache must work on unchanged.
type backend struct {
	name string
	// client opens a new client, as one more instance would.
	client func(t testing.TB) redis.UniversalClient
}

// backends are one Redis server and the local Redis Cluster.
var backends = []backend{
	{"single", func(t testing.TB) redis.UniversalClient { return dbtest.NewRedis(t, redisDB) }},
	{"cluster", func(t testing.TB) redis.UniversalClient { return rediscluster.NewClient(t) }},
}

// onBothBackends runs test once per backend, as parallel subtests.
func onBothBackends(t *testing.T, test func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			test(t, be)
		})
	}
}

// keysMatching lists keys matching pattern on every master of a cluster,
// or on the one server.
func keysMatching(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		t.Fatalf("scan %s: %v", pattern, err)
	}
	return keys
}

// pgSleepLoad is a loader that costs the database a real 300 ms query,
// counted in calls.
func pgSleepLoad(t testing.TB, calls *atomic.Int64) cache.LoadFunc {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbtest.AdminURL())
	if err != nil {
		t.Fatalf("pgxpool: %v", err)
	}
	t.Cleanup(pool.Close)
	return func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		var v string
		err := pool.QueryRow(ctx, "SELECT 'value' FROM pg_sleep(0.3)").Scan(&v)
		return []byte(v), err
	}
}

// TestStampedeOnBothBackends: 5 instances (each its own client, pool and
// single-flight) × 200 concurrent Fetches of one cold key, with a
// pg_sleep loader, cost PostgreSQL one query and leave no lock key, on one
// Redis server and on the cluster alike.
func TestStampedeOnBothBackends(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			prefix := newPrefix()
			key := prefix + "{product:1}"
			var calls atomic.Int64
			load := pgSleepLoad(t, &calls)
			caches := make([]*cache.Cache, instances)
			for i := range caches {
				// Roomy lock bounds, as in runStampede: this counts loads.
				caches[i] = newCache(t, be.client(t), cache.Config{
					Mode: cache.ModeLock, LockWait: 20 * time.Second, LockTTL: 30 * time.Second})
			}
			if _, errs := fetchAtOnce(caches, key, load); len(errs) > 0 {
				t.Errorf("%d of %d fetches failed, first: %v", len(errs), instances*perInstance, errs[0])
			}
			if got := calls.Load(); got != 1 {
				t.Errorf("got %d PostgreSQL loads, want 1", got)
			}
			if left := keysMatching(t, be.client(t), "lock:"+prefix+"*"); len(left) != 0 {
				t.Errorf("got lock keys %q left, want none", left)
			}
		})
	}
}

// TestInvalidationOnBothBackends: a Set on one instance drops the other
// instance's L1 copy through pub/sub, on one server and across cluster
// nodes (PUBLISH reaches every node's subscribers).
func TestInvalidationOnBothBackends(t *testing.T) {
	onBothBackends(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		cfg := cache.Config{Mode: cache.ModeLock, L1TTL: time.Minute, SoftTTL: 2 * time.Minute,
			Channel: "inv:" + dbtest.Unique()}
		a, b := newCache(t, be.client(t), cfg), newCache(t, be.client(t), cfg)
		key := newPrefix() + "{p:1}"
		var calls atomic.Int64
		load := slowLoad(&calls, 0, "old")
		for _, c := range []*cache.Cache{a, b, b} {
			if _, err := c.Fetch(ctx, key, load); err != nil {
				t.Fatalf("warm up: %v", err)
			}
		}
		if res, _ := b.Fetch(ctx, key, load); !res.L1 || string(res.Value) != "old" {
			t.Fatalf("before Set: got %q from L1=%v, want %q from L1", res.Value, res.L1, "old")
		}
		if err := a.Set(ctx, key, []byte("new")); err != nil {
			t.Fatalf("Set: %v", err)
		}
		var last cache.Result
		if !dbtest.Eventually(5*time.Second, func() bool {
			last, _ = b.Fetch(ctx, key, load)
			return string(last.Value) == "new"
		}) {
			t.Fatalf("B after Set: got %q, want %q (the invalidation never arrived)", last.Value, "new")
		}
		if got := b.Stats().L1Invalidations; got == 0 {
			t.Errorf("B got 0 L1 invalidations, want the Set's")
		}
	})
}

// TestLockOnBothBackends: the lock excludes a second holder, and the fenced
// write (one Lua script over lock and entry, which share a hash tag) works
// on the cluster too; keys of two slots in one script are refused there,
// which is what the hash tag prevents.
func TestLockOnBothBackends(t *testing.T) {
	onBothBackends(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		rdb := be.client(t)
		prefix := newPrefix()
		key := prefix + "{p:1}"
		lk := "lock:" + key
		l, err := redislock.Obtain(ctx, rdb, lk, 10*time.Second)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if _, err := redislock.Obtain(ctx, be.client(t), lk, 10*time.Second); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second Obtain: got %v, want ErrNotObtained", err)
		}
		// The fill signal published inside the script reaches a
		// subscriber on another connection (on a cluster, maybe another
		// node: the bus carries it).
		sub := be.client(t).Subscribe(ctx, prefix+"filled")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		if err := l.SetAndRelease(ctx, key, []byte("v"), time.Minute,
			redislock.Announce{Channel: prefix + "filled", Message: "1 " + key}); err != nil {
			t.Fatalf("SetAndRelease: %v", err)
		}
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if m, err := sub.ReceiveMessage(mctx); err != nil || m.Payload != "1 "+key {
			t.Errorf("fill signal from the fenced write: got %v, %v", m, err)
		}
		if got := rdb.Get(ctx, key).Val(); got != "v" {
			t.Errorf("entry: got %q, want %q", got, "v")
		}
		if n := rdb.Exists(ctx, lk).Val(); n != 0 {
			t.Errorf("lock left after the fenced write")
		}
		// An untagged pair almost surely spans two slots.
		other := prefix + "untagged"
		l2, err := redislock.Obtain(ctx, rdb, "lock:"+prefix+"elsewhere", 10*time.Second)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		t.Cleanup(func() { rdb.Del(ctx, "lock:"+prefix+"elsewhere", other, key) })
		err = l2.SetAndRelease(ctx, other, []byte("v"), time.Minute, redislock.Announce{})
		if _, cluster := rdb.(*redis.ClusterClient); cluster && err == nil {
			t.Errorf("fenced write over two slots on the cluster: got nil, want CROSSSLOT")
		} else if !cluster && err != nil {
			t.Errorf("fenced write on one server: %v", err)
		}
	})
}

// TestMissingCopyFallsBackToEntry: with copies on, a read that finds no
// copy reads the entry itself; the database is never asked again.
func TestMissingCopyFallsBackToEntry(t *testing.T) {
	onBothBackends(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		rdb := be.client(t)
		c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, Copies: 3})
		prefix := newPrefix()
		key := prefix + "{p:1}"
		var calls atomic.Int64
		load := slowLoad(&calls, 0, "v")
		if _, err := c.Fetch(ctx, key, load); err != nil {
			t.Fatal(err)
		}
		all := keysMatching(t, rdb, prefix+"*")
		if len(all) != 3 {
			t.Fatalf("got keys %q, want the entry and 2 copies", all)
		}
		for _, k := range all {
			if k != key {
				rdb.Del(ctx, k)
			}
		}
		t.Cleanup(func() { rdb.Del(ctx, key) })
		for range 300 {
			if res, err := c.Fetch(ctx, key, load); err != nil || string(res.Value) != "v" {
				t.Fatalf("Fetch with copies gone: got %q, %v, want %q, nil", res.Value, err, "v")
			}
		}
		if got := calls.Load(); got != 1 {
			t.Errorf("got %d loads, want 1 (a missing copy must not reach the database)", got)
		}
		if got := c.Stats().CopyMisses; got < 100 {
			t.Errorf("got %d copy misses of 300 reads, want about 200 (else copies were not read)", got)
		}
	})
}
