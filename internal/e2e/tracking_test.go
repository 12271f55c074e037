package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
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
				a := launchApp(t, env)
				bases = append(bases, a.waitListening())
				// The start says how the L1 learns of changes.
				if recs := a.logs.records("listening"); len(recs) != 1 || recs[0]["l1_invalidation"] != tt.mode || recs[0]["cache_namespace"] != env["CACHE_NAMESPACE"] {
					t.Errorf("listening line %v, want l1_invalidation %s and cache_namespace %s", recs, tt.mode, env["CACHE_NAMESPACE"])
				}
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
			writeBehind(t, env, tt.id, renamed)
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
// client holding the signing key could (a forgery without it is refused:
// forgery_test.go): a signed entry of the same version, written by a cache
// of the test's own that publishes nothing.
func writeBehind(t *testing.T, env map[string]string, id int64, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn := dbConn(t, env["DATABASE_URL"])
	var key []byte
	p := repo.Product{ID: id, Name: name}
	if err := conn.QueryRow(ctx, `SELECT key FROM cache_signing_key`).Scan(&key); err != nil {
		t.Fatalf("read the signing key: %v", err)
	}
	if err := conn.QueryRow(ctx, `SELECT price_cents, updated_at FROM products WHERE id = $1`, id).Scan(&p.PriceCents, &p.UpdatedAt); err != nil {
		t.Fatalf("read product %d: %v", id, err)
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	c := cache.New(ctx, dbtest.NewRedis(t, redisDB), cache.Config{
		Mode: cache.ModeSWR, Namespace: env["CACHE_NAMESPACE"], SigningKey: key, Version: repo.EntryVersion, // the app's default TTLs
	}, dbtest.Logger(t)) // L1 off: no invalidation published
	defer c.Close()
	body, _ := json.Marshal(p)
	if err := c.Set(ctx, repo.Key(id), body); err != nil {
		t.Fatalf("write product %d: %v", id, err)
	}
}
