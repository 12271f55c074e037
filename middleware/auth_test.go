package middleware

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// countingStore knows one key and counts every lookup: the store's
// PostgreSQL side is tested in the app's end-to-end tests; here the count
// of lookups is the point.
type countingStore struct {
	valid [32]byte
	calls atomic.Int64
}

func (s *countingStore) HasHash(_ context.Context, sum [32]byte, _ string) (bool, error) {
	s.calls.Add(1)
	return sum == s.valid, nil
}

func authEngine(a *Auth, identify bool) *gin.Engine {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	h := a.Require()
	if identify {
		h = a.Identify()
	}
	e.GET("/", h, func(c *gin.Context) { c.String(http.StatusOK, KeyID(c)) })
	return e
}

func do(e http.Handler, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

// TestAuthLookupsBounded: a verified key is asked for once and then
// believed from memory; made-up keys cost at most the lookup budget, and
// a flood of them on open routes leaves the write routes' budget intact.
func TestAuthLookupsBounded(t *testing.T) {
	const key = "sgk_real-key-0123456789"
	store := &countingStore{valid: sha(key)}
	a := NewAuth(AuthConfig{Store: store, Scope: "write", CacheTTL: time.Minute, LookupsPerSecond: 3,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require, identify := authEngine(a, false), authEngine(a, true)

	for i := range 50 {
		if rec := do(require, "Bearer "+key); rec.Code != http.StatusOK || rec.Body.String() == "" {
			t.Fatalf("valid key #%d: got %d %q", i, rec.Code, rec.Body)
		}
	}
	if n := store.calls.Load(); n != 1 {
		t.Errorf("50 requests with one valid key: %d lookups, want 1", n)
	}

	store.calls.Store(0)
	for i := range 100 {
		rec := do(identify, fmt.Sprintf("Bearer made-up-%d", i))
		if rec.Code != http.StatusOK || rec.Body.String() != "" {
			t.Fatalf("made-up key on an open route: got %d %q, want 200 anonymous", rec.Code, rec.Body)
		}
	}
	if n := store.calls.Load(); n > 5 {
		t.Errorf("100 made-up keys: %d lookups, want ≤ the budget (3, plus refill)", n)
	}
	// The write routes' budget is untouched: an unknown key there is
	// looked up and refused, not 503.
	if rec := do(require, "Bearer another-made-up-key"); rec.Code != http.StatusUnauthorized {
		t.Errorf("unknown key on a write route after the flood: got %d, want 401", rec.Code)
	}
	for i := range 10 {
		do(require, fmt.Sprintf("Bearer flood-%d", i))
	}
	if rec := do(require, "Bearer yet-another-made-up-key"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("unknown key beyond the budget: got %d, want 503 + Retry-After", rec.Code)
	}
	if rec := do(require, ""); rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("no key: got %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}

// TestAuthStaticKeys: API_KEYS keys pass without any store; nothing else.
func TestAuthStaticKeys(t *testing.T) {
	a := NewAuth(AuthConfig{Static: []string{"first-key-0123456789", "second-key-0123456789"}, Scope: "write",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e := authEngine(a, false)
	for auth, want := range map[string]int{
		"Bearer first-key-0123456789": 200, "Bearer second-key-0123456789": 200, "Bearer first-key-012345678": 401,
		"Bearer first-key-01234567890": 401, "Bearer ": 401, "first-key-0123456789": 401,
	} {
		if rec := do(e, auth); rec.Code != want {
			t.Errorf("%q: got %d, want %d", auth, rec.Code, want)
		}
	}
}

func sha(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// TestAuthSaysWhatIsWrong: a missing key, a header that is not a Bearer
// key, and two Authorization headers each get their own answer. A key too
// long to be one was told "this route needs an API key", though one was
// sent; two headers were read as the first.
func TestAuthSaysWhatIsWrong(t *testing.T) {
	a := NewAuth(AuthConfig{Static: []string{"first-key-0123456789"}, Scope: "write",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e := authEngine(a, false)
	tests := []struct {
		name    string
		headers []string
		status  int
		says    string
	}{
		{"none", nil, http.StatusUnauthorized, "needs an API key"},
		{"too long to be a key", []string{"Bearer " + strings.Repeat("k", maxKeyLen+1)}, http.StatusUnauthorized, "at most 256"},
		{"another scheme", []string{"Basic dXNlcjpwdw=="}, http.StatusUnauthorized, "must be Bearer"},
		{"two headers", []string{"Bearer first-key-0123456789", "Bearer bogus-key-0123456789"}, http.StatusBadRequest, "given 2 times"},
		{"the key", []string{"Bearer first-key-0123456789"}, http.StatusOK, ""},
	}
	open := authEngine(a, true) // Identify: an open route with an optional key
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.headers) > 1 {
				req := httptest.NewRequest("GET", "/", nil)
				req.Header["Authorization"] = tt.headers
				rec := httptest.NewRecorder()
				open.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest {
					t.Errorf("open route: got %d %s, want 400", rec.Code, rec.Body)
				}
				if a.Believed(ginContext(req)) {
					t.Error("Believed a request with two Authorization headers")
				}
			}
			req := httptest.NewRequest("GET", "/", nil)
			if tt.headers != nil {
				req.Header["Authorization"] = tt.headers
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.says) {
				t.Errorf("got %d %s, want %d saying %q", rec.Code, rec.Body, tt.status, tt.says)
			}
		})
	}
}

// ginContext wraps req in a gin.Context, for calls that take one.
func ginContext(req *http.Request) *gin.Context {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = req
	return c
}
