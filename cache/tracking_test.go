package cache

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// trackingBound is how soon after an external write every instance's L1
// must have dropped the key. Redis sends the invalidation as it applies the
// write, one hop over loopback, so it takes milliseconds; the bound is 2 s
// so that no stall of a loaded 2-core machine reaches it. It still proves
// the invalidation: these tests hold entries in L1 for a minute, so nothing
// else can drop one within 2 s.
const trackingBound = 2 * time.Second

// trackingCache is one instance, on a client of its own, tracking prefix
// with a long L1 (so only an invalidation, not expiry, removes an entry).
// It returns the Cache and its tracking connection's name, unique to it
// because CLIENT LIST shows every client of the server.
func trackingCache(t *testing.T, prefix string, copies int) (*Cache, string) {
	t.Helper()
	return trackingCacheOn(t, dbtest.NewRedis(t, redisDB), prefix, copies)
}

// trackingCacheOn is trackingCache on rdb's logical database.
func trackingCacheOn(t *testing.T, rdb *redis.Client, prefix string, copies int) (*Cache, string) {
	t.Helper()
	t.Cleanup(func() { dbtest.DeletePrefix(t, rdb, prefix) }) // after the Cache closes
	opt := *rdb.Options()
	opt.ClientName = "t" + dbtest.Unique() + ":l1-tracking"
	cfg := Config{Mode: ModeLock, L1TTL: time.Minute, Copies: copies, Channel: "inv:" + dbtest.Unique(),
		Tracking: &opt, TrackPrefixes: []string{prefix}}
	c := New(context.Background(), rdb, cfg, dbtest.Logger(t))
	t.Cleanup(c.Close)
	return c, opt.ClientName
}

func inL1(c *Cache, key string) bool {
	_, ok := c.l1.get(key, c.now())
	return ok
}

// warm fetches key on each cache until every one holds it in L1 at once. A
// load's own write comes back as an invalidation, and a FLUSHDB by another
// package's tests (tracking is server-wide) flushes every L1, so it retries.
func warm(t *testing.T, key string, cs ...*Cache) {
	t.Helper()
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	if !dbtest.Eventually(5*time.Second, func() bool {
		for _, c := range cs {
			if !inL1(c, key) {
				_, _ = c.Fetch(context.Background(), key, load)
			}
		}
		// Let the echo of a load's own write pass: an entry that is still
		// there afterwards stays until something changes the key.
		time.Sleep(20 * time.Millisecond)
		for _, c := range cs {
			if !inL1(c, key) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("warm %s: the instances never all held it in L1", key)
	}
}

// evictedWithin polls every millisecond until no cache holds key in L1 and
// returns how long after t0 that was, failing the test past bound.
func evictedWithin(t *testing.T, bound time.Duration, t0 time.Time, key string, cs ...*Cache) time.Duration {
	t.Helper()
	for time.Since(t0) <= 2*bound {
		held := 0
		for _, c := range cs {
			if inL1(c, key) {
				held++
			}
		}
		if held == 0 {
			took := time.Since(t0)
			if took > bound {
				t.Errorf("L1 dropped %s after %s, want within %s", key, took, bound)
			}
			return took
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("L1 still holds %s after %s, want dropped within %s", key, 2*bound, bound)
	return 0
}

// rawSet sets key from a bare RESP connection of its own (no go-redis, no
// Cache): the write any other program could make. The connection is open,
// authenticated and on the test database before the clock starts, so the
// time it returns covers the SET alone.
func rawSet(key string) (time.Time, error) {
	opt, err := redis.ParseURL(dbtest.RedisURL())
	if err != nil {
		return time.Time{}, err
	}
	conn, err := net.DialTimeout("tcp", opt.Addr, 5*time.Second)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return time.Time{}, err
	}
	replies := bufio.NewReader(conn)
	ask := func(want string, args ...string) error {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(b.String())); err != nil {
			return err
		}
		line, err := replies.ReadString('\n')
		if got := strings.TrimRight(line, "\r\n"); err != nil || got != want {
			return fmt.Errorf("%s: got %q (%v), want %s", args[0], got, err, want)
		}
		return nil
	}
	if opt.Password != "" {
		auth := []string{"AUTH", opt.Password}
		if opt.Username != "" {
			auth = []string{"AUTH", opt.Username, opt.Password}
		}
		if err := ask("+OK", auth...); err != nil {
			return time.Time{}, err
		}
	}
	if err := ask("+OK", "SELECT", strconv.Itoa(redisDB)); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	return t0, ask("+OK", "SET", key, "x", "PX", "60000") // expires: a test leaves nothing behind
}

// TestTrackingEvictsOnExternalWrite: a write by a client that is no Cache
// at all (go-redis, or a bare RESP connection) drops the key from every instance's L1.
func TestTrackingEvictsOnExternalWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := dbtest.NewRedis(t, redisDB)
	tests := []struct {
		name string
		set  func(key string) (began time.Time, err error)
	}{
		{"go-redis client", func(key string) (time.Time, error) {
			return time.Now(), plain.Set(ctx, key, "x", time.Minute).Err()
		}},
		{"raw RESP connection", rawSet},
	}
	for _, tc := range tests {
		prefix := newTestPrefix()
		a, _ := trackingCache(t, prefix, 1)
		b, _ := trackingCache(t, prefix, 1)
		c, _ := trackingCache(t, prefix, 1)
		key := prefix + "{p:1}"
		warm(t, key, a, b, c)
		before := b.Stats().L1Invalidations
		t0, err := tc.set(key)
		if err != nil {
			t.Fatalf("%s: SET: %v", tc.name, err)
		}
		wrote := time.Since(t0)
		took := evictedWithin(t, trackingBound, t0, key, a, b, c)
		t.Logf("%s: every L1 dropped the key %s after the SET began (the SET took %s)", tc.name, took, wrote)
		if got := b.Stats().L1Invalidations; got <= before {
			t.Errorf("%s: got L1Invalidations %d, want more than %d", tc.name, got, before)
		}
		if n := plain.PubSubNumSub(ctx, a.cfg.Channel).Val()[a.cfg.Channel]; n != 0 {
			t.Errorf("%s: got %d subscribers on the pub/sub channel, want 0 with tracking", tc.name, n)
		}
	}
}

// TestTrackingCopyKeyEvictsBase: a write to a copy drops the entry the
// copies share from L1.
func TestTrackingCopyKeyEvictsBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := dbtest.NewRedis(t, redisDB)
	prefix := newTestPrefix()
	c, _ := trackingCache(t, prefix, 3)
	key := prefix + "{p:1}"
	warm(t, key, c)
	t0 := time.Now()
	if err := plain.Set(ctx, copyKey(key, 2), "x", time.Minute).Err(); err != nil {
		t.Fatalf("SET copy: %v", err)
	}
	took := evictedWithin(t, trackingBound, t0, key, c)
	t.Logf("L1 dropped %s after %s for a write to its copy", key, took)
}

func newTestPrefix() string { return "t" + dbtest.Unique() + ":" }
