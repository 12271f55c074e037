package cache_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// countMentions returns a netproxy observer that counts, in n, the commands
// a client sends that name key (every RESP argument ends in CRLF): what
// crossed the wire to Redis for that key, seen from outside the client.
func countMentions(key string, n *atomic.Int64) func() func([]byte) {
	needle := []byte(key + "\r\n")
	return func() func([]byte) {
		var tail []byte // the end of the last chunk, for a needle split across two
		return func(b []byte) {
			buf := append(tail, b...)
			n.Add(int64(bytes.Count(buf, needle)))
			// Keep fewer bytes than the needle, so nothing is counted twice.
			keep := min(len(buf), len(needle)-1)
			tail = append([]byte(nil), buf[len(buf)-keep:]...)
		}
	}
}

// TestAbsentEntriesServedFromL1: with the L1 on, a cached "not found" is an
// L1 hit like any value. After the first lookup of an unknown key (one load,
// negative entry stored), 100 more lookups cost no query and no Redis
// command naming the key, counted on a TCP proxy between the client and
// Redis.
func TestAbsentEntriesServedFromL1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := newPrefix() + "{neg:1}"
	var mentions atomic.Int64
	p, err := netproxy.New(dbtest.RedisAddr(), netproxy.Options{Observe: countMentions(key, &mentions)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	opt, err := redis.ParseURL(dbtest.RedisDBURL(redisDB))
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr = p.Addr()
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	c := newCache(t, rdb, cache.Config{Mode: cache.ModeSWR, L1TTL: 10 * time.Second, NegativeTTL: 30 * time.Second})
	admin := dbtest.NewRedis(t, redisDB)
	t.Cleanup(func() { admin.Del(context.Background(), key) })

	var loads atomic.Int64
	absent := func(context.Context) ([]byte, error) { loads.Add(1); return nil, cache.ErrAbsent }
	r, err := c.Fetch(ctx, key, absent)
	if err != nil || !r.Absent {
		t.Fatalf("first lookup: %+v, %v; want absent", r, err)
	}
	if mentions.Load() == 0 {
		t.Fatal("the proxy saw no command naming the key on the first lookup: the counter is broken")
	}
	before := mentions.Load()
	var notL1 int
	for i := range 100 {
		r, err := c.Fetch(ctx, key, absent)
		if err != nil || !r.Absent {
			t.Fatalf("lookup %d: %+v, %v; want absent", i, r, err)
		}
		if !r.L1 {
			notL1++
		}
	}
	if got := mentions.Load() - before; got != 0 || notL1 != 0 {
		t.Errorf("100 repeated lookups of an absent key: %d sent Redis commands naming it, %d not answered from L1; want 0 and 0", got, notL1)
	}
	if loads.Load() != 1 {
		t.Errorf("loads: %d, want 1", loads.Load())
	}
}
