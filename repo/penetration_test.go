package repo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestUnknownIDsCostBoundedQueries: 10 000 unique ids that do not exist
// cost at most the filter's load, its budget per second, one catch-up per
// second and a few false positives — not 10 000 queries. Existing
// products, and one created behind the filter's back (as on another
// instance), are still found.
func TestUnknownIDsCostBoundedQueries(t *testing.T) {
	t.Parallel()
	const budget, flood = 5, 10_000
	products, _, pool := newProducts(t, db.Config{})
	ctx := testCtx(t)
	filterLoaded(t, products, products.FilterUnknownIDs(budget))

	before := pool.Stat().AcquireCount()
	start := time.Now()
	for i := range int64(flood) {
		// A deadline per call, not one for the flood: beside CPU burners
		// the 10 000 calls once took more than testTimeout together.
		callCtx, cancel := context.WithTimeout(t.Context(), testTimeout)
		_, _, err := products.Get(callCtx, 50_000_000+i)
		cancel()
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get(%d) after %s of the flood: got %v, want ErrNotFound", 50_000_000+i, time.Since(start).Round(time.Millisecond), err)
		}
	}
	secs := time.Since(start).Seconds()
	queries := pool.Stat().AcquireCount() - before
	// The budget's burst and rate, one catch-up per second,
	// and false positives (0.1 % expected: 10; 40 allowed).
	bound := int64(budget + budget*secs + secs + 1 + 40)
	if queries > bound {
		t.Errorf("%d unknown ids in %.1fs cost %d queries, want ≤ %d", flood, secs, queries, bound)
	}
	t.Logf("%d unknown ids in %.2fs: %d queries (bound %d)", flood, secs, queries, bound)

	if p, _, err := products.Get(ctx, 500); err != nil || p.ID != 500 {
		t.Errorf("Get(500), an existing product: got %+v, %v", p, err)
	}
	newID := queryInt(t, pool, `INSERT INTO products (name, price_cents) VALUES ('made elsewhere', 1) RETURNING id`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, _, err := products.Get(ctx, newID)
		if err == nil && p.ID == newID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("product %d created behind the filter: still %v after 5 s", newID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
