package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestStatusCodes checks the status (and the headers that matter) of every
// route for valid and malformed requests. Cases run in order: some depend on
// earlier ones (MISS then HIT, PUT then GET, a key used twice).
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	// Above the stock of a seeded product (1000), so "beyond stock" is 409.
	env := testEnv(t, map[string]string{"ORDER_MAX_QUANTITY": "5000"})
	base, _ := startApp(t, env)
	for _, tc := range statusCases() {
		t.Run(tc.name, func(t *testing.T) { checkStatus(t, base, tc) })
	}
}

// statusCheck looks further at an answer whose status was as wanted.
type statusCheck func(t *testing.T, r *http.Response, body map[string]any)

// statusCase is one request of TestStatusCodes and the status it wants.
type statusCase struct {
	name, method, path string
	headers            map[string]string
	body               string
	want               int
	check              statusCheck
}

// statusCases are TestStatusCodes' requests, in order.
func statusCases() []statusCase {
	newName := "Renamed " + dbtest.Unique()
	idemKey := "status-" + dbtest.Unique()
	var firstOrderID any
	bigName := strings.Repeat("a", 1<<20)
	return []statusCase{
		{"get miss", "GET", "/products/1", nil, "", 200, wantCacheHeaders("MISS", "fwd=miss")},
		{"get hit", "GET", "/products/1", nil, "", 200, wantCacheHeaders("HIT", "hit")},
		{"id zero", "GET", "/products/0", nil, "", 400, nil},
		{"id negative", "GET", "/products/-3", nil, "", 400, nil},
		{"id not a number", "GET", "/products/abc", nil, "", 400, nil},
		{"id fraction", "GET", "/products/1.5", nil, "", 400, nil},
		{"id absent", "GET", "/products/999999", nil, "", 404, nil},
		{"list", "GET", "/products?limit=2", nil, "", 200, func(t *testing.T, _ *http.Response, b map[string]any) {
			if items, _ := b["items"].([]any); len(items) != 2 {
				t.Errorf("items: got %d, want 2", len(items))
			}
		}},
		{"list limit zero", "GET", "/products?limit=0", nil, "", 400, nil},
		{"list limit not a number", "GET", "/products?limit=abc", nil, "", 400, nil},
		{"list after negative", "GET", "/products?after=-1", nil, "", 400, nil},
		{"create", "POST", "/products", nil, `{"name":"Widget","price_cents":1234,"stock":3}`, 201, wantLocation(`^/products/\d+$`)},
		{"create malformed json", "POST", "/products", nil, `{"name":`, 400, nil},
		{"create unknown field", "POST", "/products", nil, `{"name":"a","price_cents":1,"colour":"red"}`, 400, nil},
		{"create wrong type", "POST", "/products", nil, `{"name":"a","price_cents":"5"}`, 400, nil},
		{"create negative price", "POST", "/products", nil, `{"name":"a","price_cents":-1}`, 400, nil},
		{"create missing name", "POST", "/products", nil, `{"price_cents":1}`, 400, nil},
		{"create trailing data", "POST", "/products", nil, `{"name":"a","price_cents":1} {}`, 400, nil},
		{"create empty body", "POST", "/products", nil, "", 400, nil},
		{"create text/plain", "POST", "/products", map[string]string{"Content-Type": "text/plain"}, `{"name":"a","price_cents":1}`, 415, nil},
		{"create body over 1 MiB", "POST", "/products", nil, `{"name":"` + bigName + `","price_cents":1}`, 413, nil},
		{"update", "PUT", "/products/2", nil, fmt.Sprintf(`{"name":%q,"price_cents":999}`, newName), 200, nil},
		{"get after update", "GET", "/products/2", nil, "", 200, func(t *testing.T, _ *http.Response, b map[string]any) {
			if b["name"] != newName {
				t.Errorf("name: got %v, want %q", b["name"], newName)
			}
		}},
		{"update absent", "PUT", "/products/999999", nil, `{"name":"a","price_cents":1}`, 404, nil},
		{"delete not allowed", "DELETE", "/products/1", nil, "", 405, nil},
		{"no such route", "GET", "/nope", nil, "", 404, nil},
		{"order", "POST", "/orders", nil, `{"product_id":3,"quantity":1}`, 201, wantLocation(`^/orders/\d+\?token=[A-Za-z0-9_-]{43}$`)},
		{"order quantity zero", "POST", "/orders", nil, `{"product_id":3,"quantity":0}`, 400, nil},
		{"order quantity negative", "POST", "/orders", nil, `{"product_id":3,"quantity":-2}`, 400, nil},
		{"order missing product", "POST", "/orders", nil, `{"quantity":1}`, 400, nil},
		{"order absent product", "POST", "/orders", nil, `{"product_id":999999,"quantity":1}`, 404, nil},
		{"order beyond stock", "POST", "/orders", nil, `{"product_id":3,"quantity":5000}`, 409, nil},
		// Above the cap and the stock: 409, as for any order the product
		// cannot fill (the cap's 400 is checkout_abuse_test.go's).
		{"order above ORDER_MAX_QUANTITY and stock", "POST", "/orders", nil, `{"product_id":3,"quantity":5001}`, 409, nil},
		{"idempotent first", "POST", "/orders", map[string]string{"Idempotency-Key": idemKey}, `{"product_id":4,"quantity":2}`, 201,
			func(t *testing.T, r *http.Response, b map[string]any) {
				wantHeader("Idempotent-Replayed", "")(t, r, nil)
				firstOrderID = b["id"]
			}},
		{"idempotent replay", "POST", "/orders", map[string]string{"Idempotency-Key": idemKey}, `{"product_id":4,"quantity":2}`, 201,
			func(t *testing.T, r *http.Response, b map[string]any) {
				wantHeader("Idempotent-Replayed", "true")(t, r, nil)
				if b["id"] == nil || b["id"] != firstOrderID {
					t.Errorf("order id: got %v, want %v (the first order)", b["id"], firstOrderID)
				}
			}},
		{"idempotent other body", "POST", "/orders", map[string]string{"Idempotency-Key": idemKey}, `{"product_id":4,"quantity":3}`, 422, nil},
		{"report", "GET", "/reports/top-products", nil, "", 200, func(t *testing.T, _ *http.Response, b map[string]any) {
			if items, _ := b["items"].([]any); len(items) == 0 {
				t.Errorf("items: got none, want some")
			}
		}},
		{"report limit too big", "GET", "/reports/top-products?limit=1000", nil, "", 400, nil},
		{"healthz", "GET", "/healthz", nil, "", 200, nil},
		{"readyz", "GET", "/readyz", nil, "", 200, nil},
	}
}

// checkStatus sends tc and checks its answer: tc.want, never 5xx, JSON
// with an "error" on every refusal, and tc.check.
func checkStatus(t *testing.T, base string, tc statusCase) {
	resp, raw := call(t, tc.method, base+tc.path, tc.headers, tc.body)
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %s: got %d, want %d (never 5xx); body %s", tc.method, tc.path, resp.StatusCode, tc.want, raw)
	}
	if resp.StatusCode != tc.want {
		t.Fatalf("%s %s: got %d, want %d; body %s", tc.method, tc.path, resp.StatusCode, tc.want, raw)
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
	body := decodeObject(t, raw)
	if msg, _ := body["error"].(string); tc.want >= 400 && msg == "" {
		t.Errorf("error key: got body %s, want a non-empty \"error\"", raw)
	}
	if tc.check != nil {
		tc.check(t, resp, body)
	}
}

func wantHeader(name, want string) statusCheck {
	return func(t *testing.T, r *http.Response, _ map[string]any) {
		if got := r.Header.Get(name); got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func wantCacheHeaders(xcache, cacheStatus string) statusCheck {
	return func(t *testing.T, r *http.Response, _ map[string]any) {
		wantHeader("X-Cache", xcache)(t, r, nil)
		if got := r.Header.Get("Cache-Status"); !strings.HasPrefix(got, "stampede-guard; "+cacheStatus) {
			t.Errorf("Cache-Status: got %q, want prefix %q", got, "stampede-guard; "+cacheStatus)
		}
	}
}

func wantLocation(pattern string) statusCheck {
	return func(t *testing.T, r *http.Response, _ map[string]any) {
		if got := r.Header.Get("Location"); !regexp.MustCompile(pattern).MatchString(got) {
			t.Errorf("Location: got %q, want match %s", got, pattern)
		}
	}
}
