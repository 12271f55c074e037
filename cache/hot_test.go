package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// hotKeys is a HotSet the test changes as it goes, as a detector would.
type hotKeys struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (h *hotKeys) Hot(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[key]
}

func (h *hotKeys) set(key string, hot bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys[key] = hot
}

// TestOnlyHotKeysUseCopies: with a HotSet and Copies 3, a load writes
// copies for a hot key only; a write of a key that cooled deletes its old
// copies; a key that turns hot gets its copies from its entry on the next
// reads (never from another load).
func TestOnlyHotKeysUseCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, 1)
	ns := "t" + dbtest.Unique() + ":"
	hot := &hotKeys{keys: map[string]bool{"{hot}": true}}
	c := New(ctx, rdb, Config{Mode: ModeLock, Copies: 3, Hot: hot, Namespace: ns, Channel: "inv:" + dbtest.Unique()}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	var loads atomic.Int64
	load := func(context.Context) ([]byte, error) { loads.Add(1); return []byte("v"), nil }
	copiesLeft := func(key string) int64 { return rdb.Exists(ctx, c.copyKeys(ns+key)...).Val() }

	for _, k := range []string{"{hot}", "{cold}"} {
		if _, err := c.Fetch(ctx, k, load); err != nil {
			t.Fatalf("Fetch %s: %v", k, err)
		}
	}
	if n := copiesLeft("{hot}"); n != 2 {
		t.Errorf("hot key after its load: got %d copies, want 2", n)
	}
	if n := copiesLeft("{cold}"); n != 0 {
		t.Errorf("cold key after its load: got %d copies, want 0", n)
	}

	hot.set("{hot}", false)
	if err := c.Set(ctx, "{hot}", []byte("w")); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if n := copiesLeft("{hot}"); n != 0 {
		t.Errorf("cooled key after a write: got %d copies, want 0 (old copies would serve the old value)", n)
	}

	hot.set("{cold}", true)
	spread := dbtest.Eventually(2*time.Second, func() bool {
		res, err := c.Fetch(ctx, "{cold}", load)
		if err != nil || string(res.Value) != "v" {
			t.Fatalf("Fetch of the promoted key: got %q, %v, want %q", res.Value, err, "v")
		}
		return copiesLeft("{cold}") == 2
	})
	if !spread {
		t.Errorf("promoted key: got %d copies, want 2 written from its entry", copiesLeft("{cold}"))
	}
	if got := loads.Load(); got != 2 {
		t.Errorf("got %d loads, want 2 (a missing copy falls back to the entry, never to the source)", got)
	}
	t.Cleanup(func() {
		for _, k := range []string{"{hot}", "{cold}"} {
			_ = c.Invalidate(ctx, k)
		}
	})
}

// TestHotKeyLongerL1: a hot key stays in L1 for HotL1TTL, a cold one for
// L1TTL (the clock is the test's).
func TestHotKeyLongerL1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, 1)
	ns := "t" + dbtest.Unique() + ":"
	hot := &hotKeys{keys: map[string]bool{"{hot}": true}}
	c := New(ctx, rdb, Config{Mode: ModeLock, L1TTL: time.Second, HotL1TTL: 5 * time.Second, Hot: hot, Namespace: ns,
		Channel: "inv:" + dbtest.Unique(), FillChannel: "fill:" + dbtest.Unique()}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	c.now = func() time.Time { return time.Unix(0, clock.Load()) }
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	for _, k := range []string{"{hot}", "{cold}"} {
		if _, err := c.Fetch(ctx, k, load); err != nil {
			t.Fatalf("Fetch %s: %v", k, err)
		}
		t.Cleanup(func() { _ = c.Invalidate(ctx, k) })
	}
	clock.Add(int64(2 * time.Second))
	for _, tc := range []struct {
		key    string
		wantL1 bool
	}{{"{hot}", true}, {"{cold}", false}} {
		res, err := c.Fetch(ctx, tc.key, load)
		if err != nil || res.L1 != tc.wantL1 {
			t.Errorf("%s 2 s later (L1 1 s, hot 5 s): got L1=%v %v, want L1=%v nil", tc.key, res.L1, err, tc.wantL1)
		}
	}
}
