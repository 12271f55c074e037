package e2e

import (
	"testing"
	"time"
)

// TestClientIPFromForwardedForOnly: behind a trusted proxy the client
// address comes from X-Forwarded-For, as documented, and never from
// X-Real-IP, which a proxy that only appends X-Forwarded-For passes through
// from the client untouched.
func TestClientIPFromForwardedForOnly(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["TRUSTED_PROXIES"] = "127.0.0.1/32"
	a := launchApp(t, env)
	base := a.waitListening()
	tests := []struct {
		id      string
		headers map[string]string
		want    string
	}{
		{"probe-x-real-ip", map[string]string{"X-Real-IP": "203.0.113.9"}, "127.0.0.1"},
		{"probe-x-forwarded-for", map[string]string{"X-Forwarded-For": "203.0.113.7"}, "203.0.113.7"},
		// An X-Forwarded-For with no address in it: gin falls through its
		// header list, which must not hold X-Real-IP (with X-Real-IP alone
		// the service reads the peer without asking gin).
		{"probe-both", map[string]string{"X-Forwarded-For": "unknown", "X-Real-IP": "203.0.113.9"}, "127.0.0.1"},
	}
	for _, tc := range tests {
		h := map[string]string{"X-Request-ID": tc.id}
		for k, v := range tc.headers {
			h[k] = v
		}
		call(t, "GET", base+"/healthz", h, "")
	}
	clientIP := func(id string) (string, bool) {
		for _, rec := range a.logs.records("request") {
			if rec["request_id"] == id {
				ip, _ := rec["client_ip"].(string)
				return ip, true
			}
		}
		return "", false
	}
	for _, tc := range tests {
		deadline := time.Now().Add(5 * time.Second)
		ip, ok := clientIP(tc.id)
		for ; !ok && time.Now().Before(deadline); ip, ok = clientIP(tc.id) {
			time.Sleep(20 * time.Millisecond)
		}
		if !ok {
			t.Fatalf("no request log line for %s", tc.id)
		}
		if ip != tc.want {
			t.Errorf("%v → client_ip %q, want %q", tc.headers, ip, tc.want)
		}
	}
}
