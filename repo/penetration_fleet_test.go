package repo_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestUnknownIDLookupsFleetWide: three instances (each its own Redis client,
// cache and filter, one database and cache namespace) share one budget of
// lookups of ids above the highest known: 10 000 unique unknown ids spread
// over them concurrently cost at most the budget per second once for the
// fleet (plus one catch-up per second per instance and the filter's false
// positives) — not three times the budget, as per-instance limits would.
func TestUnknownIDLookupsFleetWide(t *testing.T) {
	t.Parallel()
	const instances, budget, flood = 3, 50, 10_000
	pool := dbtest.NewPool(t, "repo", db.Config{MaxConns: 8})
	ctx := testCtx(t)
	fleet := newFleet(t, pool, dbtest.Namespace(t, redisDB), instances)
	for _, p := range fleet {
		filterLoaded(t, p, p.FilterUnknownIDs(budget))
	}

	before := pool.Stat().AcquireCount()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 3 * instances { // three workers per instance
		wg.Go(func() {
			for i := int64(w); i < flood; i += 3 * instances {
				if _, _, err := fleet[w%instances].Get(ctx, 60_000_000+i); !errors.Is(err, repo.ErrNotFound) {
					t.Errorf("Get(%d): got %v, want ErrNotFound", 60_000_000+i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	end := time.Now()
	queries := pool.Stat().AcquireCount() - before
	// Calendar seconds the flood touched: each one's budget once, and one
	// catch-up per instance; false positives 0.1 % (10 expected, 40 allowed).
	windows := end.Unix() - start.Unix() + 1
	bound := budget*windows + instances*windows + 40
	perInstance := instances * budget * int64(math.Ceil(end.Sub(start).Seconds()))
	t.Logf("%d unknown ids over %d instances in %s (%d calendar seconds): %d queries; bound %d (per-instance budgets would allow about %d)",
		flood, instances, end.Sub(start).Round(time.Millisecond), windows, queries, bound, perInstance)
	if queries > bound {
		t.Errorf("%d queries for %d unknown ids, want ≤ %d: the lookup budget is not shared by the fleet", queries, flood, bound)
	}
}

// newFleet is n instances' product repositories on one database and one
// cache namespace, each with its own Redis client and cache, as n
// instances of the app would have.
func newFleet(t *testing.T, pool *db.Pool, ns string, n int) []*repo.Products {
	t.Helper()
	fleet := make([]*repo.Products, n)
	for i := range fleet {
		c := cache.New(context.Background(), dbtest.NewRedis(t, redisDB), cache.Config{
			Mode: cache.ModeLock, Channel: "inv:" + dbtest.Unique(), Namespace: ns,
		}, dbtest.Logger(t))
		t.Cleanup(c.Close)
		fleet[i] = repo.NewProducts(pool, c, dbtest.Logger(t))
	}
	return fleet
}

// TestUnknownIDFilterAfterAnImportAboveTheSequence: a product imported
// with its own id far above the id sequence (no setval) must not make the
// filter take every later product for "never created". A product created
// on one instance with the sequence's next id (far below the imported
// one) is found by another instance at once: from the cache when the app
// created it, from the table within the lookup budget when it was
// inserted by hand. The filter's line is what the sequence has handed
// out, not the highest id in the table: with the highest id as the line,
// both were answered 404, without a look, until that instance's next
// check of the table (ten minutes).
func TestUnknownIDFilterAfterAnImportAboveTheSequence(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "repo", db.Config{MaxConns: 8})
	ctx := testCtx(t)
	exec(t, pool, `INSERT INTO products (id, name, price_cents) VALUES (500000, 'imported with its own id', 1)`)
	fleet := newFleet(t, pool, dbtest.Namespace(t, redisDB), 2)
	for _, p := range fleet {
		filterLoaded(t, p, p.FilterUnknownIDs(20))
	}
	created, err := fleet[0].Create(ctx, repo.NewProduct{Name: "made after the import", PriceCents: 1})
	if err != nil {
		t.Fatal(err)
	}
	byHand := queryInt(t, pool, `INSERT INTO products (name, price_cents) VALUES ('inserted after the import', 1) RETURNING id`)
	for name, id := range map[string]int64{"created on the other instance": created.ID, "inserted by hand": byHand} {
		if got, _, err := fleet[1].Get(ctx, id); err != nil || got.ID != id {
			t.Errorf("%s: Get(%d) right after: %+v, %v; want the product", name, id, got, err)
		}
	}
}
