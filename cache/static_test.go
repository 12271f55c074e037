package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// source is a tiny source of truth: one value per key, counted loads.
type source struct {
	mu     sync.Mutex
	values map[string]string
	loads  map[string]int
}

func newSource() *source { return &source{values: map[string]string{}, loads: map[string]int{}} }

func (s *source) set(key, v string) { s.mu.Lock(); defer s.mu.Unlock(); s.values[key] = v }

func (s *source) count(key string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.loads[key] }

func (s *source) loader(key string) cache.LoadFunc {
	return func(context.Context) ([]byte, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.loads[key]++
		return []byte(s.values[key]), nil
	}
}

// TestStaticKeyNeverReloadedByReads: after warm-up, a static key is a
// fresh hit however long past the soft and hard TTLs it is read, with no
// load; an ordinary key read the same way goes stale and reloads, which
// shows the reads went on long enough to matter.
func TestStaticKeyNeverReloadedByReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	prefix := newPrefix()
	static, plain := prefix+"{s:cfg}", prefix+"{s:plain}"
	src := newSource()
	src.set(static, "config-v1")
	src.set(plain, "plain-v1")
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeSWR, SoftTTL: 50 * time.Millisecond, TTL: 150 * time.Millisecond, Static: []string{static}})
	if n, err := c.Warm(ctx, []string{static, plain}, src.loader, 100, 10); err != nil || n != 2 {
		t.Fatalf("Warm: %d, %v", n, err)
	}
	if ttl := rdb.PTTL(ctx, static).Val(); ttl < time.Hour {
		t.Errorf("static key's Redis TTL: %s, want the safety TTL (24h)", ttl)
	}
	plainMisses := 0
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		r, err := c.Fetch(ctx, static, src.loader(static))
		if err != nil || r.Status != cache.Hit || string(r.Value) != "config-v1" {
			t.Fatalf("static read: %+v, %v; want a HIT of config-v1", r, err)
		}
		if r, err := c.Fetch(ctx, plain, src.loader(plain)); err == nil && r.Status != cache.Hit {
			plainMisses++
		}
	}
	if n := src.count(static); n != 1 {
		t.Errorf("static key loaded %d times, want 1 (the warm-up)", n)
	}
	if plainMisses == 0 || src.count(plain) < 2 {
		t.Errorf("plain key: %d non-HIT reads, %d loads; want some of each (the reads outlived its TTLs)", plainMisses, src.count(plain))
	}
}

// TestStaticKeyStaysStaticThroughWrites: the write path (Invalidate, then
// Reload under the lock) and Set store the new value as static again.
func TestStaticKeyStaysStaticThroughWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	key := newPrefix() + "{s:w}"
	src := newSource()
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeSWR, SoftTTL: 50 * time.Millisecond, TTL: 150 * time.Millisecond, Static: []string{key}})
	src.set(key, "v2")
	if err := c.Invalidate(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(ctx, key, src.loader(key)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // past the ordinary TTLs
	if r, err := c.Fetch(ctx, key, src.loader(key)); err != nil || r.Status != cache.Hit || string(r.Value) != "v2" {
		t.Errorf("after Invalidate+Reload: %+v, %v; want a HIT of v2", r, err)
	}
	if err := c.Set(ctx, key, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if r, err := c.Fetch(ctx, key, src.loader(key)); err != nil || r.Status != cache.Hit || string(r.Value) != "v3" {
		t.Errorf("after Set: %+v, %v; want a HIT of v3", r, err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl < time.Hour {
		t.Errorf("Redis TTL after writes: %s, want the safety TTL", ttl)
	}
	if n := src.count(key); n != 1 {
		t.Errorf("loads: %d, want 1 (the Reload)", n)
	}
}

// TestStaticRepairRestoresLostAndChangedValues: three instances run the
// repair job; a static key deleted from Redis (a restart, an eviction), or
// overwritten with a value the source does not hold, is put back without
// any read, and only one instance a period does the work.
func TestStaticRepairRestoresLostAndChangedValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	prefix := newPrefix()
	keys := []string{prefix + "{s:r1}", prefix + "{s:r2}"}
	src := newSource()
	for _, k := range keys {
		src.set(k, "truth-"+k)
	}
	const period = 100 * time.Millisecond
	var caches []*cache.Cache
	for range 3 {
		c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeSWR, Static: keys})
		caches = append(caches, c)
	}
	start := time.Now()
	for _, c := range caches {
		// Staggered, so the instances' ticks do not coincide and the key's
		// lock alone cannot make them take turns: only the job marker can.
		c.StartRepair("repair-"+prefix, period, src.loader)
		time.Sleep(period / 3)
	}
	restored := func(k string) func() bool {
		return func() bool {
			v := rdb.Get(ctx, k).Val() // a 36-byte envelope header, then the value
			return rdb.PTTL(ctx, k).Val() > time.Hour && len(v) > 36 && v[36:] == "truth-"+k
		}
	}
	for _, k := range keys {
		if !dbtest.Eventually(3*time.Second, restored(k)) {
			t.Fatalf("%s not stored by the repair job", k)
		}
	}
	if err := rdb.Del(ctx, keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, keys[1], "not an envelope", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !dbtest.Eventually(3*time.Second, restored(k)) {
			t.Errorf("%s not repaired", k)
		}
	}
	time.Sleep(10 * period) // let the job run a while: three instances, one run a period
	for _, c := range caches {
		c.Close()
	}
	elapsed := time.Since(start)
	// One instance a period: at most one load per key per 90% of a period
	// (the marker's life), where three instances would load three times.
	limit := int(elapsed/(period*9/10)) + 1
	for _, k := range keys {
		if n := src.count(k); n > limit {
			t.Errorf("%s loaded %d times in %s, want ≤ %d (one instance per period)", k, n, elapsed, limit)
		}
	}
}
