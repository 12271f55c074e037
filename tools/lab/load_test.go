package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDoProductReadsThroughTheClient: a product read goes through
// client/ with retries off and comes back as the same Result a raw GET
// gave: status, X-Cache, Retry-After, the body.
func TestDoProductReadsThroughTheClient(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(fakeAPI(func(*http.Request) { n.Add(1) }))
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

// TestBurstRawConnections: a burst sends each target once, each on a
// connection of its own opened (and warmed) before the barrier, and reads
// back status, X-Cache, Retry-After and body; a 200 product answer that is
// not a product is a failure, as client/ would report it.
func TestBurstRawConnections(t *testing.T) {
	var mu sync.Mutex
	perConn := map[string][]string{} // remote address → paths, in order
	srv := httptest.NewServer(fakeAPI(func(r *http.Request) {
		mu.Lock()
		perConn[r.RemoteAddr] = append(perConn[r.RemoteAddr], r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	var targets []Target
	for range 20 {
		for _, p := range []string{"/products/1", "/products/2", "/products/3", "/healthz"} {
			targets = append(targets, Target{Base: srv.URL, Path: p})
		}
	}
	rs, _ := Burst(context.Background(), targets)
	for i, r := range rs {
		var ok bool
		switch targets[i].Path {
		case "/products/1":
			ok = r.Status == 200 && r.XCache == "STALE" && strings.Contains(r.Body, "new name") && r.Err == ""
		case "/products/2":
			ok = r.Status == 503 && r.RetryAfter && strings.Contains(r.Body, "retry later")
		case "/products/3": // 200, but no product
			ok = r.Status == 0 && strings.Contains(r.Err, "not a product")
		default:
			ok = r.Status == 200 && r.Err == ""
		}
		if !ok || r.Latency <= 0 {
			t.Errorf("%s: got %+v", targets[i].Path, r)
		}
	}
	if len(perConn) != len(targets) {
		t.Errorf("%d connections for %d targets, want one each", len(perConn), len(targets))
	}
	for addr, paths := range perConn {
		if len(paths) != 2 || paths[0] != "/healthz" {
			t.Errorf("connection %s carried %v, want the warming /healthz then one target", addr, paths)
		}
	}
}

// fakeAPI answers as the service would: /products/1 a STALE product,
// /products/2 a 503 with Retry-After, anything else {"status":"ok"} (a 200
// that is not a product); seen is told of every request first.
func fakeAPI(seen func(*http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen(r)
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
	})
}

// TestClosedLoopSenders: both closed-loop senders keep one worker's
// requests going back to back for the round and fail none of them.
func TestClosedLoopSenders(t *testing.T) {
	srv := httptest.NewServer(fakeAPI(func(*http.Request) {}))
	defer srv.Close()
	hc := newClient(4)
	defer hc.CloseIdleConnections()
	for name, open := range map[string]func(context.Context) (sender, func(), error){
		"net/http":       viaNetHTTP(hc, srv.URL+"/products/1"),
		"raw connection": viaRawConn(srv.URL, "/products/1"),
	} {
		r := closedLoop(context.Background(), 4, 200*time.Millisecond, open)
		if r.failed != 0 || r.rps < 100 {
			t.Errorf("%s: %+v, want no failure and requests back to back", name, r)
		}
	}
}
