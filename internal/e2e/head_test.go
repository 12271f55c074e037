package e2e

import (
	"net/http"
	"strconv"
	"testing"
)

// TestHeadOnEveryGetRoute: every GET route answers HEAD with the status and
// headers of GET and no body (it was 405 everywhere).
func TestHeadOnEveryGetRoute(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	base, _ := startApp(t, env)
	resp, body := call(t, "POST", base+"/orders", nil, `{"product_id":9,"quantity":1}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /orders: %d %s", resp.StatusCode, body)
	}
	order := resp.Header.Get("Location")
	waitLastModified(t, base+"/products/11") // GET and HEAD both carry it
	paths := []string{
		"/products/11", "/products/999999", "/products/abc", "/products?limit=3",
		order, "/orders/999999999", "/reports/top-products?limit=2",
		"/healthz", "/readyz", "/metrics",
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			get, getBody := call(t, "GET", base+path, nil, "")
			head, body := call(t, "HEAD", base+path, nil, "")
			if head.StatusCode != get.StatusCode {
				t.Errorf("HEAD: got %d, want GET's %d", head.StatusCode, get.StatusCode)
			}
			if len(body) != 0 {
				t.Errorf("HEAD: got a %d-byte body, want none", len(body))
			}
			for _, h := range []string{"Content-Type", "Cache-Control", "ETag", "Last-Modified", "Location"} {
				if g, hd := get.Header.Get(h), head.Header.Get(h); g != hd {
					t.Errorf("%s: HEAD %q, GET %q", h, hd, g)
				}
			}
			if path == "/products/11" {
				// A product's body is written whole: its length is sent,
				// for HEAD too, by net/http rather than by the handler.
				want := strconv.Itoa(len(getBody))
				for _, r := range []*http.Response{get, head} {
					if got := r.Header.Get("Content-Length"); got != want {
						t.Errorf("%s: Content-Length %q, want %s", r.Request.Method, got, want)
					}
				}
			}
		})
	}
}
