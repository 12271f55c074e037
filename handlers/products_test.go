package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/repo"
)

// recordingProducts is a store that answers with one product and records
// what the handler asked of it.
type recordingProducts struct {
	updated  *repo.ProductUpdate
	created  *repo.NewProduct
	listArgs [2]int64
}

var updatedAt = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func (r *recordingProducts) Get(context.Context, int64) (repo.Product, repo.Freshness, error) {
	return recorded, repo.Freshness{Status: cache.Hit, TTL: 20 * time.Second}, nil
}

func (r *recordingProducts) Update(_ context.Context, id int64, in repo.ProductUpdate) (repo.Product, error) {
	r.updated = &in
	return repo.Product{ID: id, Name: in.Name, PriceCents: in.PriceCents}, nil
}

func (r *recordingProducts) Create(_ context.Context, in repo.NewProduct) (repo.Product, error) {
	r.created = &in
	return repo.Product{ID: 1001, Name: in.Name, PriceCents: in.PriceCents}, nil
}

func (r *recordingProducts) List(_ context.Context, after int64, limit int) (repo.Page, error) {
	r.listArgs = [2]int64{after, int64(limit)}
	return repo.Page{}, nil
}

// recorded is recordingProducts' product.
var recorded = repo.Product{ID: 7, Name: "lamp", PriceCents: 1999, UpdatedAt: updatedAt}

// productETag is the ETag of recordingProducts' product.
func productETag() string {
	_, etag := productJSON(recorded)
	return etag
}

// cachingRouter mounts the routes with an HTTP caching policy on.
func cachingRouter(store productStore) *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hc := HTTPCache{Enabled: true, MaxAge: 30 * time.Second, StaleWhileRevalidate: 270 * time.Second, NotFoundMaxAge: 5 * time.Second}
	Register(r, NewProducts(store, hc, log), NewOrders(nil, 10, log), NewReports(nil, log),
		NewHealth(time.Second, nil), http.NotFoundHandler(), Classes{Authorize: allowAll})
	return r
}

// TestProductReadCachingRules: what a browser or CDN is told about a
// product read, and the conditional requests it may send back.
func TestProductReadCachingRules(t *testing.T) {
	etag := productETag()
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		status  int
		want    map[string]string // header → value ("" = absent)
		body    bool
	}{
		{"plain read", "GET", nil, 200, map[string]string{
			"Cache-Control": "public, max-age=30, stale-while-revalidate=270", "Etag": etag,
			"Last-Modified": "Wed, 06 May 2026 07:08:09 GMT", "Content-Type": jsonType}, true},
		// The recorder keeps the body net/http drops from a HEAD answer.
		{"HEAD: same headers", "HEAD", nil, 200, map[string]string{"Etag": etag, "Content-Type": jsonType}, true},
		{"If-None-Match matches", "GET", map[string]string{"If-None-Match": etag}, 304, map[string]string{"Etag": etag}, false},
		{"If-None-Match weak form matches", "GET", map[string]string{"If-None-Match": "W/" + etag}, 304, nil, false},
		{"If-None-Match in a list", "GET", map[string]string{"If-None-Match": `"other", ` + etag}, 304, nil, false},
		{"If-None-Match: *", "GET", map[string]string{"If-None-Match": "*"}, 304, nil, false},
		{"If-None-Match differs", "GET", map[string]string{"If-None-Match": `"other"`}, 200, nil, true},
		{"If-Modified-Since at the update", "GET", map[string]string{"If-Modified-Since": "Wed, 06 May 2026 07:08:09 GMT"}, 304, nil, false},
		{"If-Modified-Since before it", "GET", map[string]string{"If-Modified-Since": "Wed, 06 May 2026 07:08:08 GMT"}, 200, nil, true},
		{"If-None-Match wins over If-Modified-Since", "GET", map[string]string{
			"If-None-Match": `"other"`, "If-Modified-Since": "Wed, 06 May 2026 07:08:09 GMT"}, 200, nil, true},
		{"unparsable If-Modified-Since is ignored", "GET", map[string]string{"If-Modified-Since": "yesterday"}, 200, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/products/7", nil)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			cachingRouter(&recordingProducts{}).ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tt.status, rec.Body)
			}
			for k, v := range tt.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if got := rec.Body.Len() > 0; got != tt.body {
				t.Errorf("body present %v, want %v: %q", got, tt.body, rec.Body)
			}
		})
	}
}

// TestNotFoundCachedBriefly: a 404 may be reused for the negative TTL, and
// an error that is not the product's absence is never cacheable.
func TestNotFoundCachedBriefly(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{repo.ErrNotFound, "public, max-age=5"},
		{repo.ErrUnavailable, "no-store"},
	} {
		rec := httptest.NewRecorder()
		cachingRouter(fakeProducts{err: tt.err}).ServeHTTP(rec, httptest.NewRequest("GET", "/products/7", nil))
		if got := rec.Header().Get("Cache-Control"); got != tt.want {
			t.Errorf("%v: Cache-Control %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestProductWrites: what the write routes pass to the store, and the
// client mistakes they refuse before calling it.
func TestProductWrites(t *testing.T) {
	etag := productETag()
	tests := []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
		check                    func(t *testing.T, s *recordingProducts, rec *httptest.ResponseRecorder)
	}{
		{"create", "POST", "/products", `{"name":"desk","price_cents":5000,"stock":3}`, nil, 201,
			func(t *testing.T, s *recordingProducts, rec *httptest.ResponseRecorder) {
				if s.created == nil || s.created.Name != "desk" || s.created.Stock != 3 {
					t.Errorf("store got %+v", s.created)
				}
				if rec.Header().Get("Location") != "/products/1001" || rec.Header().Get("Etag") == "" {
					t.Errorf("Location %q, ETag %q", rec.Header().Get("Location"), rec.Header().Get("Etag"))
				}
			}},
		{"create with stock_adjustment", "POST", "/products", `{"name":"desk","price_cents":1,"stock_adjustment":2}`, nil, 400, nil},
		{"create without a price", "POST", "/products", `{"name":"desk"}`, nil, 400, nil},
		{"update with If-Match", "PUT", "/products/7", `{"name":"lamp","price_cents":2500,"stock_adjustment":-1}`,
			map[string]string{"If-Match": etag + `, "x"`}, 200,
			func(t *testing.T, s *recordingProducts, _ *httptest.ResponseRecorder) {
				if s.updated == nil || s.updated.Precondition == nil || !s.updated.Precondition(recorded) ||
					s.updated.StockDelta == nil || *s.updated.StockDelta != -1 {
					t.Errorf("store got %+v", s.updated)
				}
			}},
		{"update without If-Match", "PUT", "/products/7", `{"name":"lamp","price_cents":2500}`, nil, 200,
			func(t *testing.T, s *recordingProducts, _ *httptest.ResponseRecorder) {
				if s.updated == nil || s.updated.Precondition != nil {
					t.Errorf("an unconditional write got a precondition: %+v", s.updated)
				}
			}},
		{"update setting stock", "PUT", "/products/7", `{"name":"lamp","price_cents":1,"stock":5}`, nil, 400, nil},
		{"update with an empty If-Match", "PUT", "/products/7", `{"name":"lamp","price_cents":1}`, map[string]string{"If-Match": " , "}, 400, nil},
		{"update of id 0", "PUT", "/products/0", `{"name":"lamp","price_cents":1}`, nil, 400, nil},
		{"list", "GET", "/products?limit=5&after=10", "", nil, 200,
			func(t *testing.T, s *recordingProducts, _ *httptest.ResponseRecorder) {
				if s.listArgs != [2]int64{10, 5} {
					t.Errorf("store got after, limit = %v", s.listArgs)
				}
			}},
		{"list limit 0", "GET", "/products?limit=0", "", nil, 400, nil},
		{"list limit 101", "GET", "/products?limit=101", "", nil, 400, nil},
		{"list after -1", "GET", "/products?after=-1", "", nil, 400, nil},
		{"list with a malformed escape", "GET", "/products?limit=%ZZ", "", nil, 400, nil},
		{"list with a semicolon", "GET", "/products?after=1;limit=2", "", nil, 400, nil},
		{"list limit twice, once malformed", "GET", "/products?limit=5&limit=%zz", "", nil, 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			s := &recordingProducts{}
			rec := httptest.NewRecorder()
			cachingRouter(s).ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status >= 400 && (s.created != nil || s.updated != nil) {
				t.Errorf("a refused request reached the store")
			}
			if got := rec.Header().Get("Cache-Control"); tt.method != "GET" && got != "no-store" {
				t.Errorf("a write answer is cacheable: Cache-Control %q", got)
			}
			if tt.check != nil {
				tt.check(t, s, rec)
			}
		})
	}
}

// TestIfMatchPrecondition: the precondition a PUT's If-Match becomes holds
// for a product whose current ETag the list names (strongly), or for any
// product with "*".
func TestIfMatchPrecondition(t *testing.T) {
	etag := productETag()
	changed := recorded
	changed.UpdatedAt = changed.UpdatedAt.Add(time.Microsecond)
	tests := []struct {
		name, ifMatch string
		current       repo.Product
		want          bool
	}{
		{"current tag", etag, recorded, true},
		{"current tag among others", `"nope", ` + etag, recorded, true},
		{"any", "*", changed, true},
		{"tag of an older version", etag, changed, false},
		{"weak tag never matches", "W/" + etag, recorded, false},
		{"other tag", `"nope"`, recorded, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPut, "/products/7", nil)
			req.Header.Set("If-Match", tt.ifMatch)
			precondition, err := ifMatch(req)
			if err != nil || precondition == nil {
				t.Fatalf("ifMatch(%q): nil precondition %v, error %v; want a precondition", tt.ifMatch, precondition == nil, err)
			}
			if got := precondition(tt.current); got != tt.want {
				t.Errorf("precondition: %v, want %v", got, tt.want)
			}
		})
	}
}
