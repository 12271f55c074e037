package cache_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// outageInstance is one app instance of TestRedisOutageOneLoadPerKey: its
// own Redis client and breaker, its own pool behind a PostgreSQL proxy that
// counts the queries reaching the database.
type outageInstance struct {
	c       *cache.Cache
	rb      *redisconn.Breaker
	states  *dbtest.Transitions
	queries *atomic.Int64
	load    func(key string) cache.LoadFunc
}

func newOutageInstance(t *testing.T, dbURL, redisAddr string, cfg cache.Config) *outageInstance {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	pgLink, queries := dbtest.NewPGProxy(t, u.Host)
	u.Host = pgLink.Addr()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.Config{URL: u.String(), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, DB: redisDB, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	states := &dbtest.Transitions{}
	// Probes every 100–200 ms: the recovery window is short, but spans
	// many L1 TTLs of reads.
	rb := redisconn.NewBreaker(rdb, breaker.Config{Failures: 1, OpenMin: 100 * time.Millisecond, OpenMax: 200 * time.Millisecond,
		OnStateChange: states.Record})
	t.Cleanup(func() { rb.Close(); _ = rdb.Close() }) // after the cache's Close, registered later
	inst := &outageInstance{c: newCache(t, rdb, cfg), rb: rb, states: states, queries: queries}
	inst.load = func(key string) cache.LoadFunc {
		return func(ctx context.Context) ([]byte, error) {
			var v string
			err := pool.With(ctx, func(conn db.Conn) error {
				return conn.QueryRow(ctx, "SELECT $1::text", "value of "+key).Scan(&v)
			})
			return []byte(v), err
		}
	}
	return inst
}

// TestRedisOutageOneLoadPerKey: three instances share a Redis that goes
// away and comes back (a proxy cut and restored), each with its own Redis
// breaker and its own PostgreSQL link counting queries. Every instance
// reads 5 keys, cached in Redis before the cut, 50 times or more across the
// outage (several L1 TTLs long) and the recovery, until its breaker has
// closed again: PostgreSQL sees at most 5 queries per instance — one per key
// — though L1 alone would have let each key through once per L1 TTL, and
// every read is answered.
//
// Redis slower than the clients' 200 ms I/O timeout is the same outage to
// them, and costs the same: one query per key per instance.
func TestRedisOutageOneLoadPerKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		breakLink func(*netproxy.Proxy)
		heal      func(*netproxy.Proxy)
	}{
		{"down", func(l *netproxy.Proxy) { l.SetDown(true) }, func(l *netproxy.Proxy) { l.SetDown(false) }},
		{"slow", func(l *netproxy.Proxy) { l.SetDelay(time.Second) }, func(l *netproxy.Proxy) { l.SetDelay(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			outageOneLoadPerKey(t, tt.breakLink, tt.heal)
		})
	}
}

func outageOneLoadPerKey(t *testing.T, breakLink, heal func(*netproxy.Proxy)) {
	const instances, keys, minReads, outageReads = 3, 5, 50, 20
	const l1TTL, pace = 150 * time.Millisecond, 30 * time.Millisecond
	ctx := context.Background()
	dbURL := dbtest.NewDatabase(t, "outage")
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	prefix := newPrefix()
	cfg := cache.Config{Mode: cache.ModeSWR, L1TTL: l1TTL, SoftTTL: time.Minute, Channel: "inv:" + dbtest.Unique()}
	fleet := make([]*outageInstance, instances)
	for i := range fleet {
		fleet[i] = newOutageInstance(t, dbURL, link.Addr(), cfg)
	}
	key := func(k int) string { return fmt.Sprintf("%s{k%d}", prefix, k) }
	for k := range keys { // cached in Redis before the outage
		if _, err := fleet[0].c.Fetch(ctx, key(k), fleet[0].load(key(k))); err != nil {
			t.Fatalf("prime %s: %v", key(k), err)
		}
	}
	time.Sleep(2 * l1TTL) // no L1 copy left from the priming
	before := make([]int64, instances)
	for i, inst := range fleet {
		before[i] = inst.queries.Load()
	}

	breakLink(link)
	var outageOver sync.WaitGroup
	outageOver.Add(instances)
	restored := make(chan struct{})
	go func() {
		outageOver.Wait() // every instance made its reads with Redis away
		heal(link)
		close(restored)
	}()
	reads := make([]int, instances)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i, inst := range fleet {
		wg.Go(func() {
			for n := 0; ; n++ {
				if n == outageReads {
					outageOver.Done()
					<-restored
				}
				if n >= minReads && n > outageReads && inst.rb.State() == breaker.Closed || n == 2000 {
					reads[i] = n
					return
				}
				k := key(n % keys)
				r, err := inst.c.Fetch(ctx, k, inst.load(k))
				if err != nil || string(r.Value) != "value of "+k {
					failed.Add(1)
					t.Errorf("instance %d read %d (%s): %q, %v", i, n, k, r.Value, err)
				}
				time.Sleep(pace)
			}
		})
	}
	wg.Wait()
	for i, inst := range fleet {
		q := inst.queries.Load() - before[i]
		t.Logf("instance %d: %d reads, %d queries, breaker%s", i, reads[i], q, inst.states)
		if inst.states.Probes() == 0 {
			t.Errorf("instance %d: its Redis breaker never opened (transitions%s): the outage was not seen", i, inst.states)
		}
		if reads[i] == 2000 {
			t.Errorf("instance %d: Redis breaker still %s after 2000 reads", i, inst.rb.State())
		}
		if q > keys {
			t.Errorf("instance %d: %d queries reached PostgreSQL across the outage and the recovery, want ≤ %d (one per key)", i, q, keys)
		}
	}
}
