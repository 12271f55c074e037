package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/stampede-guard/api/client"
)

// fakeCheckout stands in for the API's POST /orders: it sheds the first
// attempt with 503 + Retry-After: 1, accepts the second, and answers 409
// for product 2 (no stock). It records the Idempotency-Key of each attempt.
func fakeCheckout() (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/orders":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"no such route"}`)
		case n == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"temporarily unavailable, retry later"}`)
		case n == 3:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":"not enough stock"}`)
		default:
			w.Header().Set("Location", "/orders/42?token=tok")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":42,"product_id":1,"quantity":2,"total_cents":1998,"created_at":"2026-12-01T04:00:00Z","token":"tok"}`)
		}
	}))
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), keys...) }
}

// A checkout that the service sheds once: the client waits the advertised
// second, retries with the same Idempotency-Key, and returns the order. An
// out-of-stock answer is returned at once, never retried.
func ExampleClient_CreateOrder() {
	srv, keys := fakeCheckout()
	defer srv.Close()

	api, err := client.New(srv.URL, client.WithAPIKey("secret"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	start := time.Now()
	res, err := api.CreateOrder(ctx, client.NewOrder{ProductID: 1, Quantity: 2})
	if err != nil {
		panic(err)
	}
	k := keys()
	fmt.Printf("order %d at %s\n", res.ID, res.Location)
	fmt.Printf("attempts: %d, same key: %v, waited Retry-After: %v\n", len(k), k[0] == k[1], time.Since(start) >= time.Second)

	_, err = api.CreateOrder(ctx, client.NewOrder{ProductID: 2, Quantity: 1})
	var apiErr *client.APIError
	if errors.Is(err, client.ErrOutOfStock) && errors.As(err, &apiErr) {
		fmt.Printf("out of stock: %d %q after %d attempt\n", apiErr.Status, apiErr.Message, apiErr.Attempts)
	}
	// Output:
	// order 42 at /orders/42?token=tok
	// attempts: 2, same key: true, waited Retry-After: true
	// out of stock: 409 "not enough stock" after 1 attempt
}
