package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestCheckoutCannotBeDrained reproduces issue 27 row 3: one anonymous
// client emptied a product with `quantity: 10000` in one request, and could
// place 100 such orders a second. With the defaults (RATE_LIMIT on) an order
// holds at most ORDER_MAX_QUANTITY (10) items, and each client has an order
// budget (ORDER_RATE_LIMIT, 60 a minute): 429 with Retry-After and
// X-RateLimit-* past it, while another client still buys.
func TestCheckoutCannotBeDrained(t *testing.T) {
	t.Parallel()
	// RATE_LIMIT and ORDER_RATE_LIMIT at their defaults; the test's
	// requests come from 127.0.0.1, its "other client" through a proxy.
	env := testEnv(t, map[string]string{"RATE_LIMIT": "", "TRUSTED_PROXIES": "127.0.0.1/32"})
	base, _ := startApp(t, env)
	conn := dbConn(t, env["DATABASE_URL"])
	const product = 31
	stock := scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product)

	// Above the cap: 400 naming it where the product has that much, 409
	// where it has not; nothing sold either way.
	for _, tc := range []struct {
		quantity int64
		status   int
		says     string
	}{
		{stock, http.StatusBadRequest, "1 to 10"},
		{11, http.StatusBadRequest, "1 to 10"},
		{10000, http.StatusConflict, "stock"},
	} {
		resp, body := call(t, "POST", base+"/orders", nil, fmt.Sprintf(`{"product_id":%d,"quantity":%d}`, product, tc.quantity))
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.says) {
			t.Errorf("quantity %d of %d in stock: got %d %s, want %d naming %q", tc.quantity, stock, resp.StatusCode, body, tc.status, tc.says)
		}
	}
	if got := scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product); got != stock {
		t.Fatalf("stock after refused orders: %d, want %d", got, stock)
	}

	order := func(headers map[string]string) *http.Response {
		resp, body := call(t, "POST", base+"/orders", headers, fmt.Sprintf(`{"product_id":%d,"quantity":10}`, product))
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("POST /orders: got %d %s", resp.StatusCode, body)
		}
		return resp
	}
	var created int
	var refused *http.Response
	for range 70 {
		resp := order(nil)
		if resp.StatusCode == http.StatusCreated {
			created++
		} else if refused == nil {
			refused = resp
		}
	}
	if created > 60 || refused == nil {
		t.Fatalf("70 orders from one client: %d created, want at most 60 (ORDER_RATE_LIMIT) then 429", created)
	}
	for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if refused.Header.Get(h) == "" {
			t.Errorf("429: no %s header", h)
		}
	}
	if got := refused.Header.Get("X-RateLimit-Limit"); got != "60" {
		t.Errorf("X-RateLimit-Limit: got %q, want 60 (the order budget)", got)
	}
	if got := stock - scalar(t, conn, `SELECT stock FROM products WHERE id = $1`, product); got > 600 {
		t.Errorf("one client took %d items in a minute, want at most 60 orders × 10", got)
	}
	// Another client is not held to the first one's budget.
	if resp := order(map[string]string{"X-Forwarded-For": "198.51.100.20"}); resp.StatusCode != http.StatusCreated {
		t.Errorf("another client's order: got %d, want 201", resp.StatusCode)
	}
}

// TestOrderBudgetFollowsRateLimitOff: RATE_LIMIT=off (a load test from one
// machine) turns the order budget off too, unless ORDER_RATE_LIMIT is set.
func TestOrderBudgetFollowsRateLimitOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, orderLimit string
		wantRefused      bool
	}{
		{"unset follows RATE_LIMIT=off", "", false},
		{"set wins", "3-M", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, _ := startApp(t, testEnv(t, map[string]string{"ORDER_RATE_LIMIT": tc.orderLimit}))
			refused := false
			for range 65 {
				resp, body := call(t, "POST", base+"/orders", nil, `{"product_id":32,"quantity":1}`)
				switch resp.StatusCode {
				case http.StatusCreated:
				case http.StatusTooManyRequests:
					refused = true
				default:
					t.Fatalf("POST /orders: got %d %s", resp.StatusCode, body)
				}
			}
			if refused != tc.wantRefused {
				t.Errorf("65 orders with RATE_LIMIT=off, ORDER_RATE_LIMIT=%q: refused %v, want %v", tc.orderLimit, refused, tc.wantRefused)
			}
		})
	}
}
