package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestHTTPCacheHeaders checks what each route tells browsers and CDNs:
// product reads carry the configured directives and validators, everything
// else is no-store. One app per configuration (each starts on a fresh
// database), every request of that configuration sent to it.
func TestHTTPCacheHeaders(t *testing.T) {
	t.Parallel()
	id := productID(t)
	product := fmt.Sprint("/products/", id)
	type request struct {
		method, path, body string
		wantStatus         int
		wantCC             string
	}
	tests := []struct {
		name     string
		env      map[string]string
		requests []request
	}{
		{"defaults from the TTLs", map[string]string{"CACHE_SOFT_TTL": "30s", "CACHE_TTL": "10m", "CACHE_NEGATIVE_TTL": "7s"}, []request{
			{"GET", product, "", 200, "public, max-age=30, stale-while-revalidate=570, stale-if-error=600"},
			{"GET", fmt.Sprint("/products/", absentProductID), "", 404, "public, max-age=7"},
			{"GET", "/products/x", "", 400, "no-store"},
			{"GET", "/products?limit=2", "", 200, "no-store"},
			{"GET", "/reports/top-products", "", 200, "no-store"},
			{"POST", "/products", `{"name":"n","price_cents":1}`, 201, "no-store"},
			{"PUT", product, `{"name":"n","price_cents":2}`, 200, "no-store"},
			{"POST", "/orders", `{"product_id":3,"quantity":1}`, 201, "no-store"},
		}},
		{"configured", map[string]string{"HTTP_MAX_AGE": "5s", "HTTP_STALE_WHILE_REVALIDATE": "1m", "HTTP_STALE_IF_ERROR": "1h"}, []request{
			{"GET", product, "", 200, "public, max-age=5, stale-while-revalidate=60, stale-if-error=3600"},
		}},
		{"lock mode: fresh until the hard TTL", map[string]string{"CACHE_MODE": "lock", "CACHE_TTL": "10m"}, []request{
			{"GET", product, "", 200, "public, max-age=600, stale-if-error=600"},
		}},
		{"HTTP caching off", map[string]string{"HTTP_CACHE": "false"}, []request{
			{"GET", product, "", 200, "no-store"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			base, _ := startApp(t, env)
			for _, r := range tt.requests {
				what := r.method + " " + r.path
				resp, raw := call(t, r.method, base+r.path, map[string]string{"Idempotency-Key": "httpcache-headers-order"}, r.body)
				if resp.StatusCode != r.wantStatus {
					t.Errorf("%s: got %d, want %d; body %s", what, resp.StatusCode, r.wantStatus, raw)
					continue
				}
				if got := resp.Header.Get("Cache-Control"); got != r.wantCC {
					t.Errorf("%s: Cache-Control: got %q, want %q", what, got, r.wantCC)
				}
				if v := resp.Header.Values("Vary"); len(v) > 0 {
					t.Errorf("%s: Vary: got %q, want none (nothing varies by request header)", what, v)
				}
				if r.method != "GET" || r.path != product {
					continue
				}
				if resp.Header.Get("ETag") == "" {
					t.Errorf("%s: ETag missing on a product read", what)
				}
				// Seeded a moment ago, the product may have no date yet
				// (TestHTTPConditionalRequests waits for it).
				if lm := resp.Header.Get("Last-Modified"); lm != "" {
					if _, err := http.ParseTime(lm); err != nil {
						t.Errorf("%s: Last-Modified %q: %v", what, lm, err)
					}
				}
			}
		})
	}
}

// TestHTTPConditionalRequests walks a product through revalidation and a
// conditional write: a matching If-None-Match is a 304 answered while the
// products table is locked (so no query could have run) and without a
// cache load; If-Match guards PUT; the old ETag then gets the new body.
func TestHTTPConditionalRequests(t *testing.T) {
	t.Parallel()
	id := productID(t)
	env := testEnv(t)
	base, _ := startAppFilterLoaded(t, env)
	url := fmt.Sprint(base, "/products/", id)

	resp, first := call(t, "GET", url, nil, "")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("first GET: got %d, ETag %q; want 200 and a strong ETag", resp.StatusCode, etag)
	}

	t.Run("If-None-Match current is 304 without the database", func(t *testing.T) {
		loads := scrape(t, base)["stampede_cache_loads_total"]
		_, release := lockTable(t, env["DATABASE_URL"], "products")
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			start := time.Now()
			resp, raw := call(t, "GET", url, map[string]string{"If-None-Match": inm}, "")
			if resp.StatusCode != http.StatusNotModified || len(raw) != 0 {
				t.Errorf("If-None-Match %s: got %d with %d body bytes, want 304 and no body", inm, resp.StatusCode, len(raw))
			}
			if got := resp.Header.Get("ETag"); got != etag {
				t.Errorf("If-None-Match %s: ETag %q, want %q", inm, got, etag)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("If-None-Match %s: took %v with the table locked; want no wait on the database", inm, d)
			}
		}
		release()
		if got := scrape(t, base)["stampede_cache_loads_total"]; got != loads {
			t.Errorf("cache loads during revalidation: got %v more, want 0", got-loads)
		}
	})

	t.Run("If-None-Match other is 200", func(t *testing.T) {
		resp, raw := call(t, "GET", url, map[string]string{"If-None-Match": `"other"`}, "")
		if resp.StatusCode != 200 || string(raw) != string(first) {
			t.Errorf("got %d %s, want 200 %s", resp.StatusCode, raw, first)
		}
	})

	t.Run("If-Modified-Since", func(t *testing.T) {
		lm := waitLastModified(t, url)
		if r, _ := call(t, "GET", url, map[string]string{"If-Modified-Since": lm}, ""); r.StatusCode != http.StatusNotModified {
			t.Errorf("If-Modified-Since Last-Modified: got %d, want 304", r.StatusCode)
		}
		old := "Mon, 01 Jan 2001 00:00:00 GMT"
		if r, _ := call(t, "GET", url, map[string]string{"If-Modified-Since": old}, ""); r.StatusCode != 200 {
			t.Errorf("If-Modified-Since %s: got %d, want 200", old, r.StatusCode)
		}
	})

	var newTag string
	t.Run("If-Match", func(t *testing.T) {
		tests := []struct {
			name, ifMatch string
			wantStatus    int
		}{
			{"malformed", "not-a-tag", http.StatusBadRequest},
			{"stale tag", `"stale"`, http.StatusPreconditionFailed},
			{"weak tag", "W/" + etag, http.StatusPreconditionFailed},
			{"current tag", etag, http.StatusOK},
			{"same tag again, now old", etag, http.StatusPreconditionFailed},
		}
		for _, tt := range tests {
			resp, raw := call(t, "PUT", url, map[string]string{"If-Match": tt.ifMatch}, `{"name":"edited","price_cents":77}`)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("%s: PUT If-Match %s: got %d %s, want %d", tt.name, tt.ifMatch, resp.StatusCode, raw, tt.wantStatus)
			}
			if resp.StatusCode == http.StatusOK {
				newTag = resp.Header.Get("ETag")
			}
			if resp.StatusCode != http.StatusOK && !strings.Contains(string(raw), `"error"`) {
				t.Errorf("%s: body %s, want an error message", tt.name, raw)
			}
		}
		if newTag == "" || newTag == etag {
			t.Fatalf("PUT's ETag: got %q, want a new one (old %q)", newTag, etag)
		}
	})

	// RFC 9110 §13.1.2: a PUT with If-None-Match "*", or naming the
	// current ETag (weakly), must not write. It was ignored: the PUT
	// answered 200 and overwrote the product.
	t.Run("If-None-Match on PUT", func(t *testing.T) {
		tests := []struct {
			name, url, ifNoneMatch string
			wantStatus             int
		}{
			{"malformed", url, "not-a-tag", http.StatusBadRequest},
			{"any current version", url, "*", http.StatusPreconditionFailed},
			{"the current tag, weak", url, "W/" + newTag, http.StatusPreconditionFailed},
			{"an absent product", fmt.Sprint(base, "/products/", absentProductID), "*", http.StatusNotFound},
			{"another tag", url, `"other"`, http.StatusOK},
		}
		for _, tt := range tests {
			resp, raw := call(t, "PUT", tt.url, map[string]string{"If-None-Match": tt.ifNoneMatch}, `{"name":"guarded","price_cents":78}`)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("%s: PUT If-None-Match %s: got %d %s, want %d", tt.name, tt.ifNoneMatch, resp.StatusCode, raw, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK {
				newTag = resp.Header.Get("ETag")
			}
		}
	})

	t.Run("old ETag gets the new body", func(t *testing.T) {
		resp, raw := call(t, "GET", url, map[string]string{"If-None-Match": etag}, "")
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"guarded"`) {
			t.Fatalf("got %d %s, want 200 with the edited product", resp.StatusCode, raw)
		}
		if got := resp.Header.Get("ETag"); got != newTag {
			t.Errorf("ETag: got %q, want the one PUT returned, %q", got, newTag)
		}
		if r, _ := call(t, "GET", url, map[string]string{"If-None-Match": newTag}, ""); r.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match with PUT's ETag: got %d, want 304", r.StatusCode)
		}
	})

	// Last-Modified has whole seconds, updated_at microseconds: a date
	// given out in the second of an update named a second in which the
	// product changed again, and If-Modified-Since with it was answered
	// 304 for the newer version. Now no date is given out until that
	// second is over, and a date within it never makes a 304.
	t.Run("an update in the second of the last is never 304 by date", func(t *testing.T) {
		body := func(name string) string { return `{"name":"` + name + `","price_cents":79}` }
		if r, raw := call(t, "PUT", url, nil, body("same-second-1")); r.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %d %s", r.StatusCode, raw)
		}
		r, _ := call(t, "GET", url, nil, "")
		since := r.Header.Get("Last-Modified")
		if since != "" {
			t.Errorf("Last-Modified %q right after an update, want none until its second is over", since)
		} else {
			since = time.Now().UTC().Format(http.TimeFormat) // what a client could hold
		}
		if r, raw := call(t, "PUT", url, nil, body("same-second-2")); r.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %d %s", r.StatusCode, raw)
		}
		r, raw := call(t, "GET", url, map[string]string{"If-Modified-Since": since}, "")
		if r.StatusCode != http.StatusOK || !strings.Contains(string(raw), "same-second-2") {
			t.Errorf("GET If-Modified-Since %s after a second update: %d %s, want 200 with the second update", since, r.StatusCode, raw)
		}
		if r, raw := call(t, "PUT", url, map[string]string{"If-Unmodified-Since": since}, body("same-second-3")); r.StatusCode != http.StatusPreconditionFailed {
			t.Errorf("PUT If-Unmodified-Since %s after an update in its second: %d %s, want 412", since, r.StatusCode, raw)
		}
	})
}

// waitLastModified waits until the product at url has a Last-Modified and
// returns it. A product seeded or updated a moment ago has none: its date
// is given out once that second, and one more, are over.
func waitLastModified(t *testing.T, url string) string {
	t.Helper()
	var lm string
	dbtest.WaitFor(t, "a Last-Modified", func() bool {
		r, _ := call(t, "GET", url, nil, "")
		lm = r.Header.Get("Last-Modified")
		return lm != ""
	})
	return lm
}
