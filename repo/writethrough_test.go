package repo_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestConcurrentUpdatesCacheTheCommittedRow: however concurrent updates of
// one product interleave their cache refreshes, the cached value ends equal
// to the row the database committed last (a plain SET of each writer's own
// value could leave an older one cached).
func TestConcurrentUpdatesCacheTheCommittedRow(t *testing.T) {
	t.Parallel()
	const id, writers, rounds = 77, 12, 5
	products, _, pool := newProducts(t, db.Config{MaxConns: 8}, id)
	ctx := testCtx(t)
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				in := repo.ProductUpdate{Name: fmt.Sprintf("r%d-w%d", round, w), PriceCents: int64(100*round + w)}
				if _, err := products.Update(ctx, id, in); err != nil {
					t.Errorf("Update: %v", err)
				}
			})
		}
		wg.Wait()
		committed := queryInt(t, pool, "SELECT price_cents FROM products WHERE id = $1", id)
		got, _, err := products.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.PriceCents != committed {
			t.Fatalf("round %d: cached price %d, committed %d: the cache went back in time", round, got.PriceCents, committed)
		}
	}
}
