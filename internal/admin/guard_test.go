package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAdminGuard: without ADMIN_TOKEN the admin side answers only requests
// naming a loopback Host (DNS rebinding, access by name over a network);
// with it, only requests carrying the token.
func TestAdminGuard(t *testing.T) {
	tests := []struct {
		name, token, host, auth string
		basicPass               *string
		want                    int
	}{
		{"loopback IP", "", "127.0.0.1:8081", "", nil, 200},
		{"localhost", "", "localhost:8081", "", nil, 200},
		{"IPv6 loopback", "", "[::1]:8081", "", nil, 200},
		{"rebound name", "", "evil.example:8081", "", nil, 403},
		{"container name", "", "app:8081", "", nil, 403},
		{"public address", "", "10.0.0.5:8081", "", nil, 403},
		{"no Host", "", "", "", nil, 403},
		{"token: none sent", "s3cret-admin-token", "127.0.0.1", "", nil, 401},
		{"token: wrong", "s3cret-admin-token", "127.0.0.1", "Bearer nope", nil, 401},
		{"token: bearer", "s3cret-admin-token", "app:8081", "Bearer s3cret-admin-token", nil, 200},
		{"token: basic password", "s3cret-admin-token", "app:8081", "", ptr("s3cret-admin-token"), 200},
		{"token: basic wrong", "s3cret-admin-token", "app:8081", "", ptr("guess"), 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Server{Token: tc.token}
			req := httptest.NewRequest("GET", "/debug/pprof/cmdline", nil)
			req.Host = tc.host
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.basicPass != nil {
				req.SetBasicAuth("ops", *tc.basicPass)
			}
			rec := httptest.NewRecorder()
			a.handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("got %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if tc.want == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestPprofSecondsCapped: ?seconds=1000 runs for the cap, not 17 minutes,
// on every profile that takes seconds: the named ones (allocs, heap,
// block, mutex, goroutine) answer a delta over that long, as profile and
// trace do.
func TestPprofSecondsCapped(t *testing.T) {
	a := &Server{maxProfile: time.Second}
	srv := httptest.NewServer(a.handler())
	defer srv.Close()
	for _, name := range []string{"profile", "trace", "allocs", "heap", "block", "mutex", "goroutine"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/debug/pprof/"+name+"?seconds=1000", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s?seconds=1000 still running after 10 s (cap 1 s): %v", name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("got %d, want 200", resp.StatusCode)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s?seconds=1000 took %s, want about the 1 s cap", name, d)
			}
		})
	}
}
