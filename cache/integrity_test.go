package cache

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// integrityKey is the SigningKey of this file's caches.
var integrityKey = []byte("integrity test key, 32 bytes ok!")

// newIntegrityCache is a signed swr cache on Redis DB 1 whose versions are
// the values themselves (decimal), closed when the test ends.
func newIntegrityCache(t *testing.T, ns string) *Cache {
	t.Helper()
	c := New(context.Background(), dbtest.NewRedis(t, 1), Config{
		Mode: ModeSWR, Namespace: ns, SigningKey: integrityKey,
		Version: func(v []byte) uint64 { n, _ := strconv.ParseUint(string(v), 10, 64); return n },
	}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	return c
}

// loadOf returns a load of value that counts its calls.
func loadOf(calls *atomic.Int64, value string) LoadFunc {
	return func(context.Context) ([]byte, error) { calls.Add(1); return []byte(value), nil }
}

// TestEntryLifetimeBounded: genuinely signed entries (what a bug, an old
// configuration or a holder of the key could leave) planted with no Redis
// TTL at all are trusted only within the lifetimes this cache gives: a
// soft or hard expiry beyond CACHE_SOFT_TTL/CACHE_TTL, a soft expiry after
// the hard one, or a hard expiry already past is refused and reloaded (one
// load), and the reload stores an entry with a Redis TTL.
func TestEntryLifetimeBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name       string
		soft, hard time.Duration // from now
		refused    bool
	}{
		{"within bounds", 20 * time.Second, 5 * time.Minute, false},
		{"soft expiry a year ahead", 365 * 24 * time.Hour, 365 * 24 * time.Hour, true},
		{"soft expiry beyond the soft TTL", 10 * time.Minute, 10 * time.Minute, true},
		{"hard expiry beyond the TTL", 20 * time.Second, 3 * time.Hour, true},
		{"soft expiry after the hard one", 20 * time.Second, 10 * time.Second, true},
		{"hard expiry past, kept by Redis", -10 * time.Minute, -5 * time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := "t" + dbtest.Unique()
			c := newIntegrityCache(t, ns)
			t.Cleanup(func() { dbtest.DeletePrefix(t, dbtest.NewRedis(t, 1), ns+":") })
			key := ns + ":{p:1}"
			e := Entry{Value: []byte("7"), SoftExpiry: now.Add(tc.soft), HardExpiry: now.Add(tc.hard), Version: 7}
			if err := c.rdb.Set(ctx, key, c.seal(key, e), 0).Err(); err != nil { // no TTL
				t.Fatalf("plant: %v", err)
			}
			var calls atomic.Int64
			res, err := c.Fetch(ctx, "{p:1}", loadOf(&calls, "8"))
			switch {
			case err != nil:
				t.Fatalf("Fetch: %v", err)
			case tc.refused && (string(res.Value) != "8" || calls.Load() != 1 || c.Stats().OutOfBounds < 1):
				t.Fatalf("served %q with %d loads (%d out of bounds), want the planted entry refused and reloaded",
					res.Value, calls.Load(), c.Stats().OutOfBounds)
			case !tc.refused && (string(res.Value) != "7" || calls.Load() != 0):
				t.Fatalf("served %q with %d loads, want the planted entry served", res.Value, calls.Load())
			}
			if ttl := c.rdb.PTTL(ctx, key).Val(); tc.refused && (ttl <= 0 || ttl > 10*time.Minute) {
				t.Errorf("Redis TTL after the reload: %s, want one within CACHE_TTL", ttl)
			}
		})
	}
}

// TestReplayRefusedAfterWrite: a genuine entry copied aside and put back
// after a newer version was stored is refused as a replay — by the
// instance that stored the newer one (its own write), and by one that
// only heard the write's signed fill signal (it never read the new entry)
// — and reloaded; a fill signal with a forged version raises no floor. An
// instance started after the write accepts the replay: the window
// docs/security.md describes.
func TestReplayRefusedAfterWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "t" + dbtest.Unique()
	rdb := dbtest.NewRedis(t, 1)
	t.Cleanup(func() { dbtest.DeletePrefix(t, rdb, ns+":") })
	writer, hearer := newIntegrityCache(t, ns), newIntegrityCache(t, ns)
	key := ns + ":{p:1}"
	var calls atomic.Int64
	if _, err := writer.Fetch(ctx, "{p:1}", loadOf(&calls, "1")); err != nil {
		t.Fatal(err)
	}
	old := rdb.Get(ctx, key).Val() // version 1, genuinely signed
	if err := writer.Reload(ctx, "{p:1}", loadOf(&calls, "2")); err != nil {
		t.Fatal(err)
	}
	// Until the hearer's floor refuses version 1 (not merely until a fill
	// arrived: the first Fetch's own fill may come in late on a loaded
	// machine).
	dbtest.WaitFor(t, "the fill signal of version 2", func() bool { return !hearer.floors.admit(key, 1) })
	// replay puts old back and reads it through c: want is what it serves,
	// loads how many loads that costs.
	replay := func(name string, c *Cache, want string, loads int64) {
		t.Helper()
		if err := rdb.Set(ctx, key, old, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		before := calls.Load()
		res, err := c.Fetch(ctx, "{p:1}", loadOf(&calls, "2"))
		if err != nil || string(res.Value) != want || calls.Load()-before != loads {
			t.Errorf("%s: served %q, %v, with %d loads; want %q with %d", name, res.Value, err, calls.Load()-before, want, loads)
		}
	}
	replay("the writer", writer, "2", 1)
	replay("an instance that only heard the fill", hearer, "2", 1)
	if writer.Stats().Replays < 1 || hearer.Stats().Replays < 1 {
		t.Errorf("replays counted: writer %d, hearer %d; want each ≥ 1", writer.Stats().Replays, hearer.Stats().Replays)
	}
	// A fill with a forged version must not make genuine entries replays.
	heard := hearer.Stats().FillSignals
	if err := rdb.Publish(ctx, ns+":cache:filled", "0:99999:0123456789abcdef0123456789abcdef "+key).Err(); err != nil {
		t.Fatal(err)
	}
	dbtest.WaitFor(t, "the forged fill", func() bool { return hearer.Stats().FillSignals > heard })
	before := calls.Load()
	if res, err := hearer.Fetch(ctx, "{p:1}", loadOf(&calls, "2")); err != nil || string(res.Value) != "2" || calls.Load() != before {
		t.Errorf("after a forged fill: served %q, %v, with %d loads; want the genuine entry, no load", res.Value, err, calls.Load()-before)
	}
	replay("an instance started after the write (the window)", newIntegrityCache(t, ns), "1", 0)
}
