package repo_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestOrdersIdempotencyConcurrentRetries sends one request ten times at once
// with the same Idempotency-Key: one order, ten identical answers.
func TestOrdersIdempotencyConcurrentRetries(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	const retries, stock = 10, 1000
	in := repo.NewOrder{ProductID: 11, Quantity: 2, IdempotencyKey: "key-" + dbtest.Unique()}
	exec(t, pool, `UPDATE products SET stock = $2 WHERE id = $1`, in.ProductID, stock)

	ctx := testCtx(t)
	type answer struct {
		order    repo.Order
		replayed bool
		err      error
	}
	answers := make([]answer, retries)
	var wg sync.WaitGroup
	for i := range retries {
		wg.Go(func() {
			o, r, err := orders.Create(ctx, in)
			answers[i] = answer{o, r, err}
		})
	}
	wg.Wait()

	var first repo.Order
	var replays int
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("retry %d: got error %v, want nil", i, a.err)
		}
		if !a.replayed {
			first = a.order
		} else {
			replays++
		}
	}
	if replays != retries-1 {
		t.Errorf("replayed answers: got %d, want %d", replays, retries-1)
	}
	for i, a := range answers {
		if a.order.ID != first.ID || a.order.TotalCents != first.TotalCents || !a.order.CreatedAt.Equal(first.CreatedAt) {
			t.Errorf("retry %d: got order %+v, want %+v", i, a.order, first)
		}
	}
	if rows := queryInt(t, pool, `SELECT count(*) FROM orders WHERE idempotency_key = $1`, in.IdempotencyKey); rows != 1 {
		t.Errorf("orders with the key: got %d, want 1", rows)
	}
	if got, want := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, in.ProductID), int64(stock-in.Quantity); got != want {
		t.Errorf("stock: got %d, want %d (decremented once)", got, want)
	}
}

// TestOrdersIdempotencyMismatch reuses a key with another body.
func TestOrdersIdempotencyMismatch(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	key := "key-" + dbtest.Unique()
	first := repo.NewOrder{ProductID: 12, Quantity: 1, IdempotencyKey: key}
	if _, _, err := orders.Create(testCtx(t), first); err != nil {
		t.Fatalf("first Create: %v", err)
	}
	stock := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, first.ProductID)

	tests := []struct {
		name string
		in   repo.NewOrder
	}{
		{"different quantity", repo.NewOrder{ProductID: 12, Quantity: 3, IdempotencyKey: key}},
		{"different product", repo.NewOrder{ProductID: 13, Quantity: 1, IdempotencyKey: key}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := orders.Create(testCtx(t), tt.in)
			if !errors.Is(err, repo.ErrIdempotencyMismatch) {
				t.Fatalf("Create(%+v): got error %v, want ErrIdempotencyMismatch", tt.in, err)
			}
		})
	}
	if rows := queryInt(t, pool, `SELECT count(*) FROM orders WHERE idempotency_key = $1`, key); rows != 1 {
		t.Errorf("orders with the key: got %d, want 1", rows)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, first.ProductID); got != stock {
		t.Errorf("stock of product %d: got %d, want %d (unchanged by refused reuses)", first.ProductID, got, stock)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = 13`); got != 1000 {
		t.Errorf("stock of product 13: got %d, want 1000 (unchanged by refused reuses)", got)
	}
}
