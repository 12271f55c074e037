package e2e

import (
	"net/http"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestRateLimitPerKey: a request with a valid API key counts against the
// key's budget (RATE_LIMIT_KEY), one without a key — or with a made-up one,
// which must not buy a fresh budget — against its address's (RATE_LIMIT).
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	// Budgets live in Redis db 4, shared with the package's other apps: a
	// client address and a key of this run's own keep them apart.
	key := "ratelimit-key-" + dbtest.Unique()
	env["API_KEYS"] = testAPIKey + "," + key
	env["TRUSTED_PROXIES"] = "127.0.0.1/32"
	env["RATE_LIMIT"] = "3-M"
	env["RATE_LIMIT_KEY"] = "6-M"
	base, _ := startApp(t, env)
	get := func(auth, forwardedFor string) *http.Response {
		h := map[string]string{"X-Forwarded-For": forwardedFor}
		if auth != "" {
			h["Authorization"] = auth
		}
		resp, body := call(t, "GET", base+"/products/21", h, "")
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		return resp
	}
	ip := "2001:db8:" + dbtest.Unique()[:4] + "::1" // its own /64 each run

	// The address: 3 allowed, then 429 — made-up keys change nothing.
	for i := range 3 {
		if r := get("", ip); r.StatusCode != http.StatusOK || r.Header.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("anonymous #%d: got %d limit %q, want 200 limit 3", i, r.StatusCode, r.Header.Get("X-RateLimit-Limit"))
		}
	}
	if r := get("Bearer made-up-key-0123456789", ip); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("made-up key from a spent address: got %d, want 429", r.StatusCode)
	}
	// The key: its own budget of 6, from the same spent address.
	for i := range 6 {
		if r := get("Bearer "+key, ip); r.StatusCode != http.StatusOK || r.Header.Get("X-RateLimit-Limit") != "6" {
			t.Fatalf("keyed #%d: got %d limit %q, want 200 limit 6", i, r.StatusCode, r.Header.Get("X-RateLimit-Limit"))
		}
	}
	// Spent wherever it is used.
	if r := get("Bearer "+key, "2001:db8:ffff::1"); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("spent key from another address: got %d, want 429", r.StatusCode)
	}
}
