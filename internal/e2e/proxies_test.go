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
		id, header, value, want string
	}{
		{"probe-x-real-ip", "X-Real-IP", "203.0.113.9", "127.0.0.1"},
		{"probe-x-forwarded-for", "X-Forwarded-For", "203.0.113.7", "203.0.113.7"},
	}
	for _, tc := range tests {
		call(t, "GET", base+"/healthz", map[string]string{tc.header: tc.value, "X-Request-ID": tc.id}, "")
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
			t.Errorf("%s: %s → client_ip %q, want %q", tc.header, tc.value, ip, tc.want)
		}
	}
}
