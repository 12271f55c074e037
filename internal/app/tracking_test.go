package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestL1InvalidationModes runs two instances with a long L1 and changes a
// cached product behind the app's back, with a Redis client of the test's
// own. With L1_INVALIDATION=tracking, Redis tells both instances and each
// serves the new value before its L1 copy could have expired (so only the
// invalidation can have shown it: an order, not a stopwatch); with pubsub
// nobody published, so both keep serving their L1 copy.
func TestL1InvalidationModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		id      int64
		wantNew bool
	}{
		{"tracking", 955, true},
		{"pubsub", 956, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t)
			env["L1_TTL"], env["L1_INVALIDATION"] = "10s", tt.mode // l1TTL below
			bases := []string{}
			for range 2 {
				base, _ := startApp(t, env)
				bases = append(bases, base)
			}
			path := fmt.Sprint("/products/", tt.id)
			// Fill both L1s, after the first load's own write has settled.
			// No copy is older than filled, so none expires before
			// filled + L1_TTL.
			const l1TTL = 10 * time.Second
			filled := time.Now()
			for _, base := range append(bases, bases...) {
				if resp, raw := call(t, "GET", base+path, nil, ""); resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
				}
				time.Sleep(20 * time.Millisecond)
			}

			const renamed = "renamed behind the app's back"
			writeBehind(t, nsKey(env, repo.Key(tt.id)), renamed)
			start := time.Now()
			// Tracking: read until seen, up to a second before the L1
			// copies could expire. Pubsub: 300 ms of reads that must all
			// get the L1 copy (a loaded machine only makes them fewer).
			until := filled.Add(l1TTL - time.Second)
			if !tt.wantNew {
				until = start.Add(300 * time.Millisecond)
			}
			for i, base := range bases {
				seen := false
				for { // at least one read per instance, then until seen or until
					_, raw := call(t, "GET", base+path, nil, "")
					var p repo.Product
					if err := json.Unmarshal(raw, &p); err != nil {
						t.Fatalf("instance %d: decode %s: %v", i, raw, err)
					}
					seen = p.Name == renamed
					if seen || time.Now().After(until) {
						break
					}
				}
				took := time.Since(start)
				switch {
				case tt.wantNew && (!seen || time.Now().After(filled.Add(l1TTL))):
					t.Errorf("instance %d: new value seen %v after %v; want it seen before the L1 copy (%s) could expire", i, seen, took, l1TTL)
				case !tt.wantNew && seen:
					t.Errorf("instance %d: new value seen after %v; want the L1 copy (nobody published)", i, took)
				default:
					t.Logf("instance %d: new value seen %v after %v", i, seen, took)
				}
			}
		})
	}
}

// writeBehind changes the cached product's name in Redis the way any other
// client could: it rewrites the bytes of the entry, keeping its TTL.
func writeBehind(t *testing.T, key, name string) {
	t.Helper()
	rdb := dbtest.NewRedis(t, redisDB)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := rdb.Get(ctx, key).Bytes()
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	i := bytes.Index(raw, []byte(`"name":"`))
	j := bytes.Index(raw, []byte(`","price_cents"`))
	if i < 0 || j < i {
		t.Fatalf("entry %q: no name to replace", raw)
	}
	changed := append(append(append([]byte{}, raw[:i]...), fmt.Sprintf(`"name":%q`, name)...), raw[j+1:]...)
	if err := rdb.Set(ctx, key, changed, redis.KeepTTL).Err(); err != nil {
		t.Fatalf("write %s: %v", key, err)
	}
}
