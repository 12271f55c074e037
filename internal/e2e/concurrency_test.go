package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// result is one concurrent request's outcome.
type result struct {
	status   int
	id       int64
	replayed bool
}

// burst sends n POST /orders with body at the same moment (after a shared
// barrier) and returns their outcomes.
func burst(t *testing.T, base string, n int, headers map[string]string, body string) []result {
	t.Helper()
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			resp, raw, err := send(http.MethodPost, base+"/orders", headers, body)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			results[i] = result{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
			var order struct{ ID int64 }
			if resp.StatusCode == http.StatusCreated && json.Unmarshal(raw, &order) == nil {
				results[i].id = order.ID
			}
		})
	}
	close(start)
	wg.Wait()
	return results
}

// startWithDB starts the service and connects to its database, where these
// tests set stock and count the rows a burst left behind.
func startWithDB(t *testing.T, overrides ...map[string]string) (base string, conn *pgx.Conn) {
	t.Helper()
	env := testEnv(t, overrides...)
	base, _ = startApp(t, env)
	return base, dbConn(t, env["DATABASE_URL"])
}

// TestConcurrencyCheckoutNeverOversells: 20 buyers race for 5 items; exactly
// 5 win, the rest get 409, and stock ends at 0, never below.
func TestConcurrencyCheckoutNeverOversells(t *testing.T) {
	t.Parallel()
	const product, stock, buyers = 11, 5, 20
	// The 20 orders queue on one row lock. Beside CPU burners and the rest
	// of the suite the last one once waited past the 3 s statement timeout
	// and answered 503 (correctly: nothing was sold); the test is about
	// overselling, so its statements get room to wait their turn.
	base, conn := startWithDB(t, map[string]string{"REQUEST_TIMEOUT": "30s", "DB_STATEMENT_TIMEOUT": "15s"})
	if _, err := conn.Exec(context.Background(), `UPDATE products SET stock = $2 WHERE id = $1`, product, stock); err != nil {
		t.Fatalf("set stock: %v", err)
	}
	ordersBefore := scalar(t, conn, `SELECT count(*) FROM orders WHERE product_id = $1`, product)

	counts := map[int]int{}
	for _, r := range burst(t, base, buyers, nil, fmt.Sprintf(`{"product_id":%d,"quantity":1}`, product)) {
		counts[r.status]++
	}
	want := map[int]int{http.StatusCreated: stock, http.StatusConflict: buyers - stock}
	for status, n := range want {
		if counts[status] != n {
			t.Errorf("responses with %d: got %d, want %d (all: %v)", status, counts[status], n, counts)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("statuses: got %v, want only %v", counts, want)
	}
	if got := scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product); got != 0 {
		t.Errorf("stock: got %d, want 0", got)
	}
	if got := scalar(t, conn, `SELECT count(*) FROM orders WHERE product_id = $1`, product) - ordersBefore; got != stock {
		t.Errorf("new orders: got %d, want %d", got, stock)
	}
}

// TestConcurrencyIdempotencyKeyOneOrder: 10 simultaneous retries of one
// request with one Idempotency-Key create one order, and all see it.
func TestConcurrencyIdempotencyKeyOneOrder(t *testing.T) {
	t.Parallel()
	const product, quantity, retries = 12, 2, 10
	base, conn := startWithDB(t)
	stockBefore := scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product)
	key := "concurrent-" + dbtest.Unique()

	results := burst(t, base, retries, map[string]string{"Idempotency-Key": key},
		fmt.Sprintf(`{"product_id":%d,"quantity":%d}`, product, quantity))
	ids := map[int64]int{}
	fresh := 0
	for i, r := range results {
		if r.status != http.StatusCreated {
			t.Errorf("request %d: got %d, want 201", i, r.status)
			continue
		}
		ids[r.id]++
		if !r.replayed {
			fresh++
		}
	}
	if len(ids) != 1 {
		t.Errorf("distinct order ids: got %v, want exactly one", ids)
	}
	if fresh != 1 {
		t.Errorf("answers without Idempotent-Replayed: got %d, want 1", fresh)
	}
	if got := scalar(t, conn, `SELECT count(*) FROM orders WHERE idempotency_key = $1`, key); got != 1 {
		t.Errorf("orders rows with the key: got %d, want 1", got)
	}
	if got := scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product); got != stockBefore-quantity {
		t.Errorf("stock: got %d, want %d (decremented once)", got, stockBefore-quantity)
	}
}
