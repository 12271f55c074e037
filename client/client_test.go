package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is an HTTP stand-in of the API (never of PostgreSQL or Redis):
// it answers each request with the next scripted answer, repeating the
// last, and records what it received and when.
type recorder struct {
	mu      sync.Mutex
	answers []scripted
	got     []*http.Request
	at      []time.Time
}

type scripted struct {
	status int
	header map[string]string
	body   string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	n := len(r.got)
	r.got = append(r.got, req.Clone(context.Background()))
	r.at = append(r.at, time.Now())
	a := r.answers[min(n, len(r.answers)-1)]
	r.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.got...)
}

func (r *recorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

// serve starts a recorder with answers and a client of it whose backoff
// is short, so tests that retry stay fast; opts come last and win.
func serve(t *testing.T, answers []scripted, opts ...Option) (*recorder, *Client) {
	t.Helper()
	rec := &recorder{answers: answers}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	base := []Option{WithRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})}
	c, err := New(srv.URL, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return rec, c
}

func errAnswer(status int, msg string) scripted {
	return scripted{status: status, body: `{"error":"` + msg + `"}`}
}

var okProduct = scripted{status: 200, header: map[string]string{"X-Cache": "HIT", "ETag": `"abc"`},
	body: `{"id":7,"name":"seven","price_cents":700,"updated_at":"2026-01-01T00:00:00Z"}`}

var okOrder = scripted{status: 201, header: map[string]string{"Location": "/orders/9"},
	body: `{"id":9,"product_id":7,"quantity":1,"total_cents":700,"created_at":"2026-01-01T00:00:00Z"}`}

// TestRetriesOnlyWhatARetryCanFix sends one call per status and counts
// the requests: 3 (the default attempts) when a retry can help, 1 when it
// cannot, for a read and for a write without an idempotency key.
func TestRetriesOnlyWhatARetryCanFix(t *testing.T) {
	tests := []struct {
		status          int
		wantGet, wantPo int // requests for GET /products/7, POST /products
	}{
		{400, 1, 1}, {401, 1, 1}, {404, 1, 1}, {409, 1, 1}, {412, 1, 1}, {422, 1, 1},
		{500, 1, 1},
		{408, 3, 3}, {429, 3, 3}, {503, 3, 3},
		{502, 3, 1}, {504, 3, 1}, // the write may have happened
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			rec, c := serve(t, []scripted{errAnswer(tt.status, "nope")}, WithBudget(nil))
			_, _, err := c.GetProduct(context.Background(), 7)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Message != "nope" || ae.Attempts != tt.wantGet {
				t.Fatalf("GetProduct error = %v, want an *APIError %d \"nope\" after %d attempts", err, tt.status, tt.wantGet)
			}
			if got := len(rec.requests()); got != tt.wantGet {
				t.Errorf("GET: %d requests, want %d", got, tt.wantGet)
			}
			rec2, c2 := serve(t, []scripted{errAnswer(tt.status, "nope")}, WithBudget(nil))
			_, err = c2.CreateProduct(context.Background(), NewProduct{Name: "x"})
			if got := len(rec2.requests()); got != tt.wantPo || err == nil {
				t.Errorf("POST /products: %d requests (err %v), want %d and an error", got, err, tt.wantPo)
			}
		})
	}
}

// TestStockAdjustmentIsRetriedLikeAPost: a PUT that sets a name and a
// price may go again after a 504 (the second is a no-op), one that adjusts
// the stock may not (a second would adjust it twice) unless If-Match makes
// a repeat fail with 412; a 503 was not acted on, so it goes again.
func TestStockAdjustmentIsRetriedLikeAPost(t *testing.T) {
	five := int32(5)
	tests := []struct {
		name   string
		in     ProductUpdate
		status int
		want   int // requests
	}{
		{"name and price, 504", ProductUpdate{Name: "x"}, 504, 3},
		{"stock adjustment, 504", ProductUpdate{Name: "x", StockAdjustment: &five}, 504, 1},
		{"stock adjustment with If-Match, 504", ProductUpdate{Name: "x", StockAdjustment: &five, IfMatch: `"abc"`}, 504, 3},
		{"stock adjustment, 503", ProductUpdate{Name: "x", StockAdjustment: &five}, 503, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, c := serve(t, []scripted{errAnswer(tt.status, "nope")}, WithBudget(nil))
			if _, err := c.UpdateProduct(context.Background(), 7, tt.in); err == nil {
				t.Fatal("UpdateProduct succeeded, want the scripted error")
			}
			reqs := rec.requests()
			if len(reqs) != tt.want {
				t.Errorf("%d requests, want %d", len(reqs), tt.want)
			}
		})
	}
}

// TestOutcomeUnknownCarriedToTheLastAnswer: once an attempt of a write got
// a 504 (or no answer), the call's final error says the outcome is unknown,
// whatever the last attempt answered: a 412 from If-Match after a 504 is
// most likely the write's own first attempt, and a caller that re-reads
// and applies its adjustment again would apply it twice.
func TestOutcomeUnknownCarriedToTheLastAnswer(t *testing.T) {
	five := int32(5)
	in := ProductUpdate{Name: "x", StockAdjustment: &five, IfMatch: `"abc"`}
	tests := []struct {
		name    string
		answers []scripted
		unknown bool
	}{
		{"504 then 412", []scripted{errAnswer(504, "slow"), errAnswer(412, "changed")}, true},
		{"504 alone", []scripted{errAnswer(504, "slow")}, true},
		{"503 then 412", []scripted{errAnswer(503, "shed"), errAnswer(412, "changed")}, false},
		{"412 alone", []scripted{errAnswer(412, "changed")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := serve(t, tt.answers, WithBudget(nil))
			_, err := c.UpdateProduct(context.Background(), 7, in)
			if err == nil {
				t.Fatal("UpdateProduct succeeded, want the scripted error")
			}
			if got := errors.Is(err, ErrOutcomeUnknown); got != tt.unknown {
				t.Errorf("errors.Is(%v, ErrOutcomeUnknown) = %v, want %v", err, got, tt.unknown)
			}
		})
	}
}

// TestRetryAfterHonoured: the retry comes no sooner than the Retry-After
// of the answer before it, in both of the header's forms.
func TestRetryAfterHonoured(t *testing.T) {
	tests := []struct {
		name   string
		header func() string
		min    time.Duration
	}{
		{"seconds", func() string { return "1" }, time.Second},
		// HTTP-date has whole seconds: 2 s ahead is more than 1 s away.
		{"HTTP-date", func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) }, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec.mu.Lock()
				if len(rec.got) == 0 { // the date is computed when the 503 is sent
					rec.answers = []scripted{{status: 503, header: map[string]string{"Retry-After": tt.header()}, body: `{"error":"shed"}`}, okProduct}
				}
				rec.mu.Unlock()
				rec.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			c, err := New(srv.URL, WithRetry(RetryPolicy{BaseDelay: time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			p, cache, err := c.GetProduct(context.Background(), 7)
			if err != nil || p.ID != 7 || cache != CacheHit || p.ETag != `"abc"` {
				t.Fatalf("GetProduct = %+v %q %v, want product 7, HIT, ETag \"abc\"", p, cache, err)
			}
			at := rec.times()
			if len(at) != 2 {
				t.Fatalf("%d requests, want 2", len(at))
			}
			if gap := at[1].Sub(at[0]); gap < tt.min {
				t.Errorf("retry came %s after the 503, want ≥ %s (Retry-After)", gap, tt.min)
			}
		})
	}
}

// TestRetryAfterPastTheDeadlineReturnsAtOnce: when the service asks for
// more time than the call has left, the client answers now with the error
// (and its RetryAfter for the caller) instead of sleeping to fail.
func TestRetryAfterPastTheDeadlineReturnsAtOnce(t *testing.T) {
	rec, c := serve(t, []scripted{{status: 503, header: map[string]string{"Retry-After": "30"}, body: `{"error":"down"}`}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := c.GetProduct(ctx, 7)
	if !errors.Is(err, ErrUnavailable) || RetryAfter(err) != 30*time.Second {
		t.Errorf("error = %v (Retry-After %s), want ErrUnavailable with Retry-After 30s", err, RetryAfter(err))
	}
	if n := len(rec.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("took %s: it waited for the deadline", took)
	}
}

// TestNoRetryAfterCancel: a caller that cancels gets its cancellation at
// once, and nothing more is sent.
func TestNoRetryAfterCancel(t *testing.T) {
	arrived := make(chan struct{}, 10)
	var count sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Store(time.Now().UnixNano(), true)
		arrived <- struct{}{}
		<-r.Context().Done() // hangs until the client goes away
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, _, err = c.GetProduct(ctx, 7)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	time.Sleep(50 * time.Millisecond) // a retry would have arrived by now
	n := 0
	count.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestMaxElapsedBoundsTheCall: a service that never answers costs the
// caller MaxElapsed, not attempts × AttemptTimeout: the first attempt
// outlives the call's time, so no second one is sent.
func TestMaxElapsedBoundsTheCall(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithRetry(RetryPolicy{MaxElapsed: 300 * time.Millisecond, AttemptTimeout: time.Second, BaseDelay: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = c.GetProduct(context.Background(), 7)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d requests in %s, want 1: the call's 300ms ended during the first", got, time.Since(start))
	}
}

// TestIdempotencyKeyOncePerOrder: every attempt of one order carries the
// same key; the next order gets a new one.
func TestIdempotencyKeyOncePerOrder(t *testing.T) {
	rec, c := serve(t, []scripted{errAnswer(503, "shed"), errAnswer(504, "slow"), okOrder, okOrder})
	res, err := c.CreateOrder(context.Background(), NewOrder{ProductID: 7, Quantity: 1})
	if err != nil || res.ID != 9 || res.Location != "/orders/9" {
		t.Fatalf("CreateOrder = %+v, %v; want order 9 at /orders/9", res, err)
	}
	if _, err := c.CreateOrder(context.Background(), NewOrder{ProductID: 7, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (three attempts, then one)", len(reqs))
	}
	key := reqs[0].Header.Get("Idempotency-Key")
	if len(key) != 36 || res.IdempotencyKey != key {
		t.Fatalf("first key %q (result says %q), want a 36-character UUID", key, res.IdempotencyKey)
	}
	for i, r := range reqs[:3] {
		if got := r.Header.Get("Idempotency-Key"); got != key {
			t.Errorf("attempt %d: key %q, want %q", i+1, got, key)
		}
	}
	if got := reqs[3].Header.Get("Idempotency-Key"); got == key || got == "" {
		t.Errorf("second order: key %q, want a new one", got)
	}
}

// TestBudgetStopsRetriesInAnOutage: ten calls to a service that only
// fails. Without a budget each would send 3 requests (30); the budget
// allows retries only while more than half of its 10 tokens remain.
func TestBudgetStopsRetriesInAnOutage(t *testing.T) {
	rec, c := serve(t, []scripted{errAnswer(503, "down")})
	for range 10 {
		if _, _, err := c.GetProduct(context.Background(), 7); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error = %v, want ErrUnavailable", err)
		}
	}
	// Call 1: fail (9 left) retry, fail (8) retry, fail (7) out of attempts.
	// Call 2: fail (6) retry, fail (5) no more retries. Calls 3-10: one each.
	if got := len(rec.requests()); got != 13 {
		t.Errorf("%d requests, want 13 (10 calls + 3 retries)", got)
	}
}
