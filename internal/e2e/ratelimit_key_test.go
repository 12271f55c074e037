package e2e

import (
	"net/http"
	"strconv"
	"testing"
	"time"

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

// TestKeyedWritesSpareTheAddress: a write with a key the instance already
// believes counts against the key's budget only. The per-IP limit that runs
// before the key check (TestRateLimitBeforeKeyCheck: made-up keys pay it)
// charged keyed writes too, so a keyed writer spent its address's budget
// and refused every anonymous read from that address with it.
func TestKeyedWritesSpareTheAddress(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	key := "ratelimit-key-" + dbtest.Unique()
	env["API_KEYS"] = key
	env["TRUSTED_PROXIES"] = "127.0.0.1/32"
	env["RATE_LIMIT"] = "2-M"
	env["RATE_LIMIT_KEY"] = "" // follows: 20-M
	base, _ := startApp(t, env)
	ip := "2001:db8:" + dbtest.Unique()[:4] + "::1" // its own /64 each run

	for i := range 4 {
		h := map[string]string{"X-Forwarded-For": ip, "Authorization": "Bearer " + key}
		resp, body := call(t, "POST", base+"/products", h, `{"name":"keyed","price_cents":1}`)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-RateLimit-Limit") != "20" {
			t.Fatalf("keyed write #%d: got %d limit %q %s, want 201 on the key's budget (limit 20)",
				i, resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), body)
		}
	}
	for i := range 2 {
		resp, body := call(t, "GET", base+"/products/21", map[string]string{"X-Forwarded-For": ip}, "")
		if resp.StatusCode == http.StatusTooManyRequests {
			t.Fatalf("anonymous read #%d after keyed writes: 429 %s, want the address's budget untouched", i, body)
		}
	}
}

// TestRetryAfterIsEnough: a client refused by the rate limit that waits
// exactly its Retry-After is let in. The refusal was answered from memory
// until a second past the window (ulule reports its end in whole seconds,
// rounded down), and Retry-After counted from the rounded-down second, so
// a client that obeyed it was refused again in most trials; with a
// per-second limit the wait is now the window's own, at most 1 s.
func TestRetryAfterIsEnough(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["TRUSTED_PROXIES"] = "127.0.0.1/32"
	env["RATE_LIMIT"] = "3-S"
	base, _ := startApp(t, env)
	ip := "2001:db8:" + dbtest.Unique()[:4] + "::1" // its own /64 each run
	get := func() *http.Response {
		resp, body := call(t, "GET", base+"/products/22", map[string]string{"X-Forwarded-For": ip}, "")
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		return resp
	}
	for trial := range 4 {
		var refused *http.Response
		for range 10 { // 3 fit in a window; a slow machine may span two
			if r := get(); r.StatusCode == http.StatusTooManyRequests {
				refused = r
				break
			}
		}
		if refused == nil {
			t.Fatalf("trial %d: 10 requests, none refused by a 3-S limit", trial)
		}
		ra := refused.Header.Get("Retry-After")
		wait, err := strconv.Atoi(ra)
		if err != nil || wait != 1 {
			t.Fatalf("trial %d: Retry-After %q, want 1 (a second's window ends within a second)", trial, ra)
		}
		time.Sleep(time.Duration(wait) * time.Second)
		if r := get(); r.StatusCode != http.StatusOK {
			t.Fatalf("trial %d: refused again after waiting Retry-After (%s s): %d, Retry-After %q",
				trial, ra, r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
}
