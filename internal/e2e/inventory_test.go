package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestPutCannotUndoOrders replays the lost update of issue 12: an editor
// reads a product (ETag), 5 units are sold, and the editor's PUT with that
// still-matching If-Match tries to write stock 1000 back. PUT cannot set
// stock (400, nothing changes); it can adjust it, and the adjustment keeps
// every sale.
func TestPutCannotUndoOrders(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	id := productID(t)
	base, _ := startApp(t, env)
	url := fmt.Sprintf("%s/products/%d", base, id)

	resp, _ := call(t, "GET", url, nil, "")
	etag := resp.Header.Get("ETag")
	for range 5 {
		if resp, body := call(t, "POST", base+"/orders", nil, fmt.Sprintf(`{"product_id":%d,"quantity":1}`, id)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("order: %d %s", resp.StatusCode, body)
		}
	}
	conn := dbConn(t, env["DATABASE_URL"])
	stock := func() int {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT stock FROM products WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := stock(); got != 995 {
		t.Fatalf("stock after 5 orders: got %d, want 995", got)
	}

	resp, body := call(t, "PUT", url, map[string]string{"If-Match": etag}, `{"name":"Edited","price_cents":100,"stock":1000}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "stock_adjustment") {
		t.Errorf("PUT with absolute stock: got %d %s, want 400 naming stock_adjustment", resp.StatusCode, body)
	}
	if got := stock(); got != 995 {
		t.Errorf("stock after the refused PUT: got %d, want 995 (the sales kept)", got)
	}

	resp, body = call(t, "PUT", url, map[string]string{"If-Match": etag}, `{"name":"Edited","price_cents":100,"stock_adjustment":5}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT with stock_adjustment: got %d %s, want 200", resp.StatusCode, body)
	}
	if got := stock(); got != 1000 {
		t.Errorf("stock after +5: got %d, want 1000", got)
	}
	resp, body = call(t, "PUT", url, nil, `{"name":"Edited","price_cents":100,"stock_adjustment":-2000}`)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("PUT adjusting below zero: got %d %s, want 409", resp.StatusCode, body)
	}
	resp, body = call(t, "POST", base+"/products", nil, `{"name":"n","price_cents":1,"stock_adjustment":3}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST with stock_adjustment: got %d %s, want 400", resp.StatusCode, body)
	}
}
