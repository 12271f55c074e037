package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestDoubleCheckReadsTheEntry: the copies hold an older, soft-expired
// value while the entry is fresh (a copy write that failed, or copies made
// on a replica that lags). Reads of such a copy answer STALE and start a
// refresh, whose double-check must read the entry itself, find it fresh
// and load nothing; the copies are then brought up to date from it.
func TestDoubleCheckReadsTheEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, 1)
	ns := "t" + dbtest.Unique() + ":"
	c := New(ctx, rdb, Config{Mode: ModeSWR, Copies: 3, Namespace: ns, Channel: "inv:" + dbtest.Unique(),
		FillChannel: "fill:" + dbtest.Unique()}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	var loads atomic.Int64
	load := func(context.Context) ([]byte, error) { loads.Add(1); return []byte("new"), nil }
	if _, err := c.Fetch(ctx, "{k}", load); err != nil {
		t.Fatalf("first Fetch: %v", err)
	}
	t.Cleanup(func() { _ = c.Invalidate(ctx, "{k}") })
	// Several rounds: a double-check that read a random key would pick a
	// stale copy two times in three, so ten rounds leave it no chance.
	old := Entry{Value: []byte("old"), SoftExpiry: time.Now().Add(-time.Second), HardExpiry: time.Now().Add(time.Minute)}.encode()
	copies := c.copyKeys(ns + "{k}")
	for round := range 10 {
		// A refresh started by the previous round's reads may still be
		// running and repair the copies just planted before any read
		// sees them (correctly): plant them again then.
		stale := false
		for plant := 0; plant < 20 && !stale; plant++ {
			for _, k := range copies {
				if err := rdb.Set(ctx, k, old, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 100 && !stale; i++ {
				res, err := c.Fetch(ctx, "{k}", load)
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				stale = res.Status == Stale
			}
		}
		if !stale {
			t.Fatalf("round %d: no read served a stale copy in 20 plantings: the test set up nothing", round)
		}
		// Repaired in milliseconds; 10 s only bounds a broken build's wait
		// on a loaded machine. Reads go on meanwhile, as traffic would: the
		// stale read above may have joined the previous round's refresh
		// while it was finishing (single-flight, after its copy repair), and
		// then only a later stale read starts the refresh that repairs these.
		repaired := dbtest.Eventually(10*time.Second, func() bool {
			if _, err := c.Fetch(ctx, "{k}", load); err != nil {
				t.Errorf("Fetch while waiting for the repair: %v", err)
			}
			entry := rdb.Get(ctx, ns+"{k}").Val()
			for _, k := range copies {
				if rdb.Get(ctx, k).Val() != entry {
					return false
				}
			}
			return true
		})
		if !repaired {
			t.Fatalf("round %d: copies still hold the old value 10 s after a refresh found the entry newer", round)
		}
	}
	c.Close() // waits for the refreshes
	if got := loads.Load(); got != 1 {
		t.Errorf("got %d loads after 10 rounds of stale copies, want 1: the double-check must read the fresh entry, not another copy", got)
	}
}
