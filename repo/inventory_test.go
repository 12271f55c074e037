package repo_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestInventoryCannotBeUndone races orders against edits that hold an
// If-Match taken before the orders and adjust stock: every order's
// decrement survives (stock = start − sold + adjustments), where an edit
// that set stock outright would have undone the orders placed since its
// read.
func TestInventoryCannotBeUndone(t *testing.T) {
	t.Parallel()
	const id, start, buyers, editors, adjust = 503, 1000, 40, 10, 3
	products, _, pool := newProducts(t, db.Config{MaxConns: 20}, id)
	orders := repo.NewOrders(pool, nil)
	exec(t, pool, `UPDATE products SET stock = $2 WHERE id = $1`, id, start)
	ctx := testCtx(t)
	before, _, err := products.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	var sold, adjusted atomic.Int64
	var wg sync.WaitGroup
	for range buyers {
		wg.Go(func() {
			if _, _, err := orders.Create(ctx, repo.NewOrder{ProductID: id, Quantity: 1}); err != nil {
				t.Errorf("order: %v", err)
				return
			}
			sold.Add(1)
		})
	}
	for range editors {
		wg.Go(func() {
			// The editor read the product before the orders: a
			// precondition that holds stands for an If-Match that still
			// matches (stock is not in the ETag).
			delta := int32(adjust)
			_, err := products.Update(ctx, id, repo.ProductUpdate{
				Name: before.Name, PriceCents: before.PriceCents, StockDelta: &delta, Precondition: func(repo.Product) bool { return true },
			})
			if err != nil {
				t.Errorf("update: %v", err)
				return
			}
			adjusted.Add(adjust)
		})
	}
	wg.Wait()

	want := start - sold.Load() + adjusted.Load()
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, id); got != want {
		t.Errorf("stock: got %d, want %d − %d sold + %d adjusted = %d", got, start, sold.Load(), adjusted.Load(), want)
	}

	// An adjustment below zero changes nothing and says why.
	minus := int32(-(start + 1000))
	_, err = products.Update(ctx, id, repo.ProductUpdate{Name: "x", PriceCents: 1, StockDelta: &minus})
	if !errors.Is(err, repo.ErrOutOfStock) {
		t.Errorf("adjustment below zero: got %v, want ErrOutOfStock", err)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, id); got != want {
		t.Errorf("stock after a refused adjustment: got %d, want %d", got, want)
	}

	// One past the most a product holds changes nothing either, and says
	// that (it was ErrInvalid: "not valid text or out of range").
	plus := int32(repo.MaxStock - want + 1)
	_, err = products.Update(ctx, id, repo.ProductUpdate{Name: "x", PriceCents: 1, StockDelta: &plus})
	if !errors.Is(err, repo.ErrStockOverflow) {
		t.Errorf("adjustment past the maximum: got %v, want ErrStockOverflow", err)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, id); got != want {
		t.Errorf("stock after an adjustment past the maximum: got %d, want %d", got, want)
	}
}
