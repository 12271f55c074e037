package repo_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// newOrders opens a fresh seeded database and an orders repository on it.
// Orders never touch the cache, so these tests need no Redis.
func newOrders(t *testing.T) (*repo.Orders, *db.Pool) {
	t.Helper()
	pool := dbtest.NewPool(t, "repo", db.Config{MaxConns: 10})
	return repo.NewOrders(pool, dbtest.Logger(t)), pool
}

// TestOrdersNeverOversell races 20 buyers for the last 5 items.
func TestOrdersNeverOversell(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	const product, stock, buyers = 42, 5, 20
	exec(t, pool, `UPDATE products SET stock = $2 WHERE id = $1`, product, stock)
	lastID := queryInt(t, pool, `SELECT coalesce(max(id), 0) FROM orders`)

	ctx := testCtx(t)
	errs := make([]error, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			_, _, errs[i] = orders.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1})
		})
	}
	wg.Wait()

	var created, outOfStock int
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case errors.Is(err, repo.ErrOutOfStock):
			outOfStock++
		default:
			t.Errorf("buyer %d: got error %v, want nil or ErrOutOfStock", i, err)
		}
	}
	if created != stock {
		t.Errorf("created orders: got %d, want %d", created, stock)
	}
	if outOfStock != buyers-stock {
		t.Errorf("out-of-stock answers: got %d, want %d", outOfStock, buyers-stock)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, product); got != 0 {
		t.Errorf("stock afterwards: got %d, want 0", got)
	}
	rows := queryInt(t, pool, `SELECT count(*) FROM orders WHERE product_id = $1 AND id > $2`, product, lastID)
	if rows != stock {
		t.Errorf("order rows created: got %d, want %d", rows, stock)
	}
}

// TestOrdersCreate checks the single-order outcomes and the total.
func TestOrdersCreate(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	exec(t, pool, `UPDATE products SET stock = 3 WHERE id = 8`)
	// Orders whose total reaches int64's end (ORDER_MAX_QUANTITY raised).
	exec(t, pool, `UPDATE products SET stock = 2000000000, price_cents = 10000000000 WHERE id = 9`)

	tests := []struct {
		name    string
		in      repo.NewOrder
		wantErr error
	}{
		{"in stock", repo.NewOrder{ProductID: 7, Quantity: 3}, nil},
		{"unknown product", repo.NewOrder{ProductID: 999999, Quantity: 1}, repo.ErrNotFound},
		{"more than the stock", repo.NewOrder{ProductID: 8, Quantity: 4}, repo.ErrOutOfStock},
		{"a total past int64", repo.NewOrder{ProductID: 9, Quantity: 1_000_000_000}, repo.ErrTotalOverflow},
		{"a total just within int64", repo.NewOrder{ProductID: 9, Quantity: 900_000_000}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			stockBefore := queryInt(t, pool, `SELECT coalesce(max(stock), -1) FROM products WHERE id = $1`, tt.in.ProductID)
			order, replayed, err := orders.Create(ctx, tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Create(%+v): got error %v, want %v", tt.in, err, tt.wantErr)
			}
			stockAfter := queryInt(t, pool, `SELECT coalesce(max(stock), -1) FROM products WHERE id = $1`, tt.in.ProductID)
			if tt.wantErr != nil {
				if stockAfter != stockBefore {
					t.Errorf("stock after a refused order: got %d, want %d", stockAfter, stockBefore)
				}
				return
			}
			if replayed {
				t.Errorf("replayed: got true, want false for an order without a key")
			}
			price := queryInt(t, pool, `SELECT price_cents FROM products WHERE id = $1`, tt.in.ProductID)
			if want := price * int64(tt.in.Quantity); order.TotalCents != want {
				t.Errorf("TotalCents: got %d, want %d (price %d × quantity %d)", order.TotalCents, want, price, tt.in.Quantity)
			}
			if order.ProductID != tt.in.ProductID || order.Quantity != tt.in.Quantity {
				t.Errorf("order: got product %d quantity %d, want %d and %d", order.ProductID, order.Quantity, tt.in.ProductID, tt.in.Quantity)
			}
			stored := queryInt(t, pool, `SELECT total_cents FROM orders WHERE id = $1`, order.ID)
			if stored != order.TotalCents {
				t.Errorf("stored total_cents: got %d, want %d", stored, order.TotalCents)
			}
			if want := stockBefore - int64(tt.in.Quantity); stockAfter != want {
				t.Errorf("stock: got %d, want %d", stockAfter, want)
			}
		})
	}
}
