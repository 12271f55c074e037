package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDoProductReadsThroughTheClient: a product read goes through
// client/ with retries off and comes back as the same Result a raw GET
// gave: status, X-Cache, Retry-After, the body.
func TestDoProductReadsThroughTheClient(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/products/1":
			w.Header().Set("X-Cache", "STALE")
			_, _ = w.Write([]byte(`{"id":1,"name":"new name","price_cents":5,"updated_at":"2026-01-01T00:00:00Z"}`))
		case "/products/2":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"temporarily unavailable, retry later"}`))
		default:
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}
	}))
	defer srv.Close()
	hc := newClient(1)
	tests := []struct {
		path       string
		status     int
		xcache     string
		retryAfter bool
		body       string
	}{
		{"/products/1", 200, "STALE", false, "new name"},
		{"/products/2", 503, "", true, "retry later"},
		{"/healthz", 200, "", false, `"ok"`},
	}
	for _, tt := range tests {
		n.Store(0)
		r := do(context.Background(), hc, Target{Base: srv.URL, Path: tt.path})
		if r.Status != tt.status || r.XCache != tt.xcache || r.RetryAfter != tt.retryAfter || !strings.Contains(r.Body, tt.body) || r.Err != "" {
			t.Errorf("%s: got %+v, want status %d X-Cache %q Retry-After %v body with %q", tt.path, r, tt.status, tt.xcache, tt.retryAfter, tt.body)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("%s: %d requests, want 1: the lab must see every refusal, not retry it", tt.path, got)
		}
	}
}
