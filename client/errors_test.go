package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportErrors: a connection cut after the request was sent is
// retried only when repeating the request is harmless; a refused
// connection (nothing was sent) always.
func TestTransportErrors(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // the answer is lost
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithBudget(nil), WithRetry(RetryPolicy{BaseDelay: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); v := n; n = 0; return v }
	if _, err := c.CreateProduct(context.Background(), NewProduct{Name: "x"}); err == nil || count() != 1 {
		t.Errorf("POST /products with a lost answer: err %v; want an error after exactly 1 request", err)
	}
	if _, err := c.CreateOrder(context.Background(), NewOrder{ProductID: 1, Quantity: 1}); err == nil || count() != 3 {
		t.Errorf("POST /orders (has its key) with lost answers: err %v; want an error after 3 requests", err)
	}

	// A port nothing listens on: every dial is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var dials atomic.Int32
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}}
	c, err = New("http://"+addr, WithHTTPClient(hc), WithBudget(nil), WithRetry(RetryPolicy{BaseDelay: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateProduct(context.Background(), NewProduct{Name: "x"}); err == nil || dials.Load() != 3 {
		t.Errorf("POST /products to a closed port: err %v after %d dials; want an error after 3", err, dials.Load())
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{404, ErrNotFound}, {409, ErrOutOfStock}, {401, ErrUnauthorized}, {429, ErrRateLimited}, {503, ErrUnavailable},
	}
	all := []error{ErrNotFound, ErrOutOfStock, ErrUnauthorized, ErrRateLimited, ErrUnavailable}
	for _, tt := range tests {
		_, c := serve(t, []scripted{errAnswer(tt.status, "why")}, WithRetry(NoRetries))
		_, err := c.CreateOrder(context.Background(), NewOrder{ProductID: 1, Quantity: 1})
		for _, s := range all {
			if got := errors.Is(err, s); got != (s == tt.want) {
				t.Errorf("%d: errors.Is(err, %v) = %v", tt.status, s, got)
			}
		}
	}
	// A body that is not {"error": ...} still gives a message.
	_, c := serve(t, []scripted{{status: 502, body: "<html>bad gateway</html>"}}, WithRetry(NoRetries))
	_, err := c.GetOrder(context.Background(), 3, "t")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Message != "Bad Gateway" || ae.Path != "/orders/3" {
		t.Errorf("error = %#v, want Message \"Bad Gateway\" on /orders/3", err)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://a b"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q): no error", u)
		}
	}
}
