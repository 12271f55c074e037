package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/repo"
)

// fakeProducts answers every call with err (and a fixed product on nil).
type fakeProducts struct{ err error }

func (f fakeProducts) Get(context.Context, int64) (repo.Product, repo.Freshness, error) {
	return repo.Product{ID: 1, Name: "p", PriceCents: 5}, repo.Freshness{TTL: time.Second}, f.err
}
func (f fakeProducts) List(context.Context, int64, int) (repo.Page, error) { return repo.Page{}, f.err }
func (f fakeProducts) Create(context.Context, repo.NewProduct) (repo.Product, error) {
	return repo.Product{ID: 1001}, f.err
}
func (f fakeProducts) Update(context.Context, int64, repo.ProductUpdate) (repo.Product, error) {
	return repo.Product{ID: 1}, f.err
}

// TestWriteErrorMapping checks the one place errors become status codes,
// through a real route, including wrapped errors.
func TestWriteErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		want       int
		retryAfter string
	}{
		{"ok", nil, http.StatusOK, ""},
		{"not found", fmt.Errorf("get: %w", repo.ErrNotFound), http.StatusNotFound, ""},
		{"unavailable with hint", &repo.UnavailableError{RetryAfter: 2500 * time.Millisecond, Cause: errors.New("shed")}, http.StatusServiceUnavailable, "3"},
		{"unavailable bare", fmt.Errorf("x: %w", repo.ErrUnavailable), http.StatusServiceUnavailable, "1"},
		{"deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, ""},
		// A write that may have been applied is never "retry later", even
		// when its cause reads as an outage.
		{"write outcome unknown", fmt.Errorf("create: %w: %w", repo.ErrOutcomeUnknown, &repo.UnavailableError{RetryAfter: time.Second, Cause: errors.New("hung")}),
			http.StatusGatewayTimeout, ""},
		{"invalid value from the database", fmt.Errorf("x: %w", repo.ErrInvalid), http.StatusBadRequest, ""},
		{"stock past its maximum", fmt.Errorf("x: %w", repo.ErrStockOverflow), http.StatusBadRequest, ""},
		{"If-Match on an absent product", fmt.Errorf("x: %w", repo.ErrPreconditionAbsent), http.StatusPreconditionFailed, ""},
		{"internal", errors.New("boom"), http.StatusInternalServerError, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(t, fakeProducts{err: tc.err}, httptest.NewRequest("GET", "/products/1", nil))
			if rec.Code != tc.want {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tc.want, rec.Body)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After: got %q, want %q", got, tc.retryAfter)
			}
			if tc.want >= 400 {
				var body map[string]string
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] == "" {
					t.Errorf("body: got %s, want {\"error\": ...}", rec.Body)
				}
				if strings.Contains(rec.Body.String(), "boom") {
					t.Errorf("body leaks the internal error: %s", rec.Body)
				}
			}
		})
	}
}

// TestDecodeJSON covers the strict decoder: each malformed body is a 4xx
// and the store is never called (a store error would make it a 500).
func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    int
		msg                     string // in the error, when set
	}{
		{"valid", "application/json", `{"name":"a","price_cents":1}`, http.StatusCreated, ""},
		{"charset is fine", "application/json; charset=utf-8", `{"name":"a","price_cents":1}`, http.StatusCreated, ""},
		{"wrong type", "application/json", `{"name":"a","price_cents":"1"}`, http.StatusBadRequest, ""},
		{"unknown field", "application/json", `{"name":"a","price_cents":1,"x":1}`, http.StatusBadRequest, ""},
		{"trailing object", "application/json", `{"name":"a","price_cents":1} {}`, http.StatusBadRequest, ""},
		{"trailing garbage", "application/json", `{"name":"a","price_cents":1} x`, http.StatusBadRequest, ""},
		{"syntax", "application/json", `{"name":`, http.StatusBadRequest, ""},
		{"empty", "application/json", ``, http.StatusBadRequest, ""},
		{"array", "application/json", `[1]`, http.StatusBadRequest, "must be a JSON object"},
		{"null", "application/json", `null`, http.StatusBadRequest, "must be a JSON object"},
		{"missing price", "application/json", `{"name":"a"}`, http.StatusBadRequest, ""},
		{"negative price", "application/json", `{"name":"a","price_cents":-1}`, http.StatusBadRequest, ""},
		{"blank name", "application/json", `{"name":"  ","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of ideographic spaces", "application/json", `{"name":"\u3000","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of a line separator", "application/json", `{"name":"\u2028","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of a Hangul filler", "application/json", `{"name":"\u3164","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of the blank braille pattern", "application/json", `{"name":"\u2800","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of marks only", "application/json", `{"name":"\u034f\ufe0f","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name with a mark on a letter", "application/json", `{"name":"e\u0301","price_cents":1}`, http.StatusCreated, ""},
		{"name in Korean", "application/json", `{"name":"\ud55c\uae00","price_cents":1}`, http.StatusCreated, ""},
		{"empty name", "application/json", `{"name":"","price_cents":1}`, http.StatusBadRequest, "1 to 200 characters"},
		{"negative stock", "application/json", `{"name":"a","price_cents":1,"stock":-2}`, http.StatusBadRequest, ""},
		{"NUL in name", "application/json", `{"name":"a\u0000b","price_cents":1}`, http.StatusBadRequest, ""},
		{"control character in name", "application/json", `{"name":"a\u001bb","price_cents":1}`, http.StatusBadRequest, ""},
		{"overflow", "application/json", `{"name":"a","price_cents":1e40}`, http.StatusBadRequest, ""},
		{"text/plain", "text/plain", `{"name":"a","price_cents":1}`, http.StatusUnsupportedMediaType, ""},
		{"no content type", "", `{"name":"a","price_cents":1}`, http.StatusUnsupportedMediaType, ""},
		// Two headers ("\n" between them): which one is the body in?
		{"two content types", "application/json\ntext/plain", `{"name":"a","price_cents":1}`, http.StatusBadRequest, ""},
		{"two content types, the same", "application/json\napplication/json", `{"name":"a","price_cents":1}`, http.StatusBadRequest, ""},
		{"duplicate key", "application/json", `{"name":"a","price_cents":1,"price_cents":0}`, http.StatusBadRequest, ""},
		{"duplicate key, same value", "application/json", `{"name":"a","name":"a","price_cents":1}`, http.StatusBadRequest, ""},
		{"key in another case", "application/json", `{"name":"a","Price_Cents":1}`, http.StatusBadRequest, ""},
		{"key in upper case", "application/json", `{"NAME":"a","price_cents":1}`, http.StatusBadRequest, ""},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", MaxBody) + `","price_cents":1}`, http.StatusRequestEntityTooLarge, ""},
		// An error repeats at most 64 bytes of a field name: one 500 KB key
		// was a 500 KB answer.
		{"long unknown field", "application/json", `{"name":"a","price_cents":1,"` + strings.Repeat("x", 500_000) + `":1}`, http.StatusBadRequest, `unknown field \"` + strings.Repeat("x", 64) + `\"…`},
		{"long unknown field in another case", "application/json", `{"name":"a","price_cents":1,"PRICE_CENTS` + strings.Repeat("x", 100) + `":1}`, http.StatusBadRequest, `\"…`},
		{"long duplicate field", "application/json", `{"` + strings.Repeat("é", 100) + `":1,"` + strings.Repeat("é", 100) + `":1}`, http.StatusBadRequest, strings.Repeat("é", 32) + `\"…`},
		{"name of zero width spaces", "application/json", `{"name":"\u200b\u200b","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name of a right-to-left override", "application/json", `{"name":"\u202e","price_cents":1}`, http.StatusBadRequest, "visible"},
		{"name with a zero width space and text", "application/json", `{"name":"a\u200bb","price_cents":1}`, http.StatusCreated, ""},
		{"name in Arabic", "application/json", `{"name":"مكتب","price_cents":1}`, http.StatusCreated, ""},
		// null decodes as a field left out: "stock": null passed where
		// "stock": 0 is checked, and a null name read as "missing".
		{"null stock", "application/json", `{"name":"a","price_cents":1,"stock":null}`, http.StatusBadRequest, `field \"stock\" must be an integer, not null`},
		{"null stock adjustment", "application/json", `{"name":"a","price_cents":1,"stock_adjustment":null}`, http.StatusBadRequest, `field \"stock_adjustment\" must be an integer, not null`},
		{"null name", "application/json", `{"name":null,"price_cents":1}`, http.StatusBadRequest, `field \"name\" must be a string, not null`},
		{"null unknown field", "application/json", `{"name":"a","price_cents":1,"x":null}`, http.StatusBadRequest, `unknown field \"x\"`},
		{"null in a string is text", "application/json", `{"name":"null","price_cents":1}`, http.StatusCreated, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/products", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header["Content-Type"] = strings.Split(tc.contentType, "\n")
			}
			rec := serveWant(t, req, tc.want)
			if strings.Contains(rec.Body.String(), `field \"\"`) {
				t.Errorf("error names an empty field: %s", rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.msg) {
				t.Errorf("error %.300s, want it to say %q", rec.Body, tc.msg)
			}
			if rec.Body.Len() > 1000 {
				t.Errorf("a %d-byte error answer, want it short", rec.Body.Len())
			}
		})
	}
}

// TestBodyCodingRefused: a body in another charset than JSON's UTF-8, or
// with a content coding, is 415 before the store: both were read as plain
// UTF-8 (a gzip header on a plain body placed an order).
func TestBodyCodingRefused(t *testing.T) {
	tests := []struct {
		name, contentType, encoding string
		want                        int
	}{
		{"charset UTF-8 in capitals", "application/json; charset=UTF-8", "", http.StatusCreated},
		{"charset utf8, its common alias", "application/json; charset=utf8", "", http.StatusCreated},
		{"identity coding", "application/json", "identity", http.StatusCreated},
		{"latin-1", "application/json; charset=latin1", "", http.StatusUnsupportedMediaType},
		{"utf-16", "application/json; charset=utf-16", "", http.StatusUnsupportedMediaType},
		{"gzip", "application/json", "gzip", http.StatusUnsupportedMediaType},
		{"identity then gzip", "application/json", "identity, gzip", http.StatusUnsupportedMediaType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/products", strings.NewReader(`{"name":"a","price_cents":1}`))
			req.Header.Set("Content-Type", tc.contentType)
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			rec := serveWant(t, req, tc.want)
			if tc.encoding == "gzip" && rec.Header().Get("Accept-Encoding") != "identity" {
				t.Errorf("415 for a coding: Accept-Encoding %q, want identity", rec.Header().Get("Accept-Encoding"))
			}
		})
	}
}

// serveWant answers req over a store that fails unless want is 201 (a bad
// body reaching the store would be a 500), and checks the status.
func serveWant(t *testing.T, req *http.Request, want int) *httptest.ResponseRecorder {
	t.Helper()
	store := fakeProducts{}
	if want != http.StatusCreated {
		store.err = errors.New("store must not be called")
	}
	rec := serve(t, store, req)
	if rec.Code != want {
		t.Errorf("got %d, want %d (body %s)", rec.Code, want, rec.Body)
	}
	return rec
}

// serve answers req with the API's routes over store.
func serve(t *testing.T, store productStore, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	router(store, nil).ServeHTTP(rec, req)
	return rec
}

// router mounts the API's routes over the given stores (nil: none), every
// write authorized.
func router(products productStore, orders orderStore) *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	Register(r, NewProducts(products, HTTPCache{}, log), NewOrders(orders, 0, log), NewReports(nil, log),
		NewHealth(time.Second, nil), http.NotFoundHandler(), Classes{Authorize: allowAll})
	return r
}

type fakeOrders struct{ called bool }

func (f *fakeOrders) Get(context.Context, int64, string) (repo.Order, error) {
	return repo.Order{}, repo.ErrNotFound
}

func (f *fakeOrders) Create(context.Context, repo.NewOrder) (repo.Order, bool, error) {
	f.called = true
	return repo.Order{ID: 1}, false, nil
}

// TestIdempotencyKeyValidated: a key PostgreSQL could not store as text,
// an empty one, or two of them (which one did the client mean?) are the
// client's mistake (400), caught before the store is called.
func TestIdempotencyKeyValidated(t *testing.T) {
	tests := []struct {
		keys []string // nil: no header
		want int
	}{
		{[]string{"order-7f3a"}, http.StatusCreated},
		{nil, http.StatusCreated},
		{[]string{""}, http.StatusBadRequest},
		{[]string{"bad\xffkey"}, http.StatusBadRequest},
		{[]string{"has space"}, http.StatusBadRequest},
		{[]string{strings.Repeat("k", 256)}, http.StatusBadRequest},
		{[]string{"key-a", "key-b"}, http.StatusBadRequest},
	}
	for _, tc := range tests {
		store := &fakeOrders{}
		req := httptest.NewRequest("POST", "/orders", strings.NewReader(`{"product_id":1,"quantity":1}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.keys != nil {
			req.Header["Idempotency-Key"] = tc.keys
		}
		rec := httptest.NewRecorder()
		router(fakeProducts{}, store).ServeHTTP(rec, req)
		if rec.Code != tc.want || store.called != (tc.want == http.StatusCreated) {
			t.Errorf("keys %q: got %d (store called %v), want %d", tc.keys, rec.Code, store.called, tc.want)
		}
	}
}

// allowAll stands in for the API key check in tests of what comes after it.
func allowAll(c *gin.Context) { c.Next() }

// errBody is a request body whose read fails with an error that names
// sockets, as a network read error does.
type errBody struct{}

func (errBody) Read([]byte) (int, error) {
	return 0, errors.New("read tcp 10.1.2.3:8080->10.9.8.7:51234: i/o timeout")
}

// TestBadRequestNeverEchoesInternals: a body that fails to read is a 400
// whose message names no address.
func TestBadRequestNeverEchoesInternals(t *testing.T) {
	req := httptest.NewRequest("POST", "/products", errBody{})
	req.Header.Set("Content-Type", "application/json")
	rec := serve(t, fakeProducts{err: errors.New("store must not be called")}, req)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("got %d, want 400 (body %s)", rec.Code, rec.Body)
	}
	for _, leak := range []string{"10.1.2.3", "8080", "10.9.8.7", "tcp"} {
		if strings.Contains(rec.Body.String(), leak) {
			t.Errorf("body %s echoes %q", rec.Body, leak)
		}
	}
}

// TestCanonicalIDs: an id is accepted only as strconv.FormatInt writes it,
// so one product has one URL (and one cache key, one ETag, one CDN entry).
func TestCanonicalIDs(t *testing.T) {
	tests := []struct {
		path string
		want int
	}{
		{"/products/1", http.StatusOK},
		{"/products/1234567", http.StatusOK},
		{"/products/9223372036854775807", http.StatusOK},
		{"/products/+1", http.StatusBadRequest},
		{"/products/01", http.StatusBadRequest},
		{"/products/%2B0001", http.StatusBadRequest},
		{"/products/%31", http.StatusBadRequest}, // "1" percent-encoded: another URL for product 1
		{"/products/0001", http.StatusBadRequest},
		{"/products/-1", http.StatusBadRequest},
		{"/products/0", http.StatusBadRequest},
		{"/products/1e3", http.StatusBadRequest},
		{"/products/%201", http.StatusBadRequest},
		{"/products/9223372036854775808", http.StatusBadRequest},
		{"/products/１", http.StatusBadRequest}, // a full-width digit
		{"/products?limit=05", http.StatusBadRequest},
		{"/products?after=+3", http.StatusBadRequest},
		{"/products?after=0", http.StatusOK},
		{"/products?limit=5&limit=6", http.StatusBadRequest}, // which one? neither
		{"/products?after=3&limit=5&after=3", http.StatusBadRequest},
		{"/reports/top-products?days=7&days=30", http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := serve(t, fakeProducts{}, httptest.NewRequest("GET", tc.path, nil))
			if rec.Code != tc.want {
				t.Errorf("got %d, want %d (body %s)", rec.Code, tc.want, rec.Body)
			}
		})
	}
}
