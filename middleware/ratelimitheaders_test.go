package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/middleware"
)

// lateEnds is a shared store whose every lease after the first reads the
// window's end a second later, as ulule's does when its round trip ends
// just past a second's edge (it adds the counter's TTL to the time the
// answer arrived).
type lateEnds struct {
	limiter.Store
	calls atomic.Int64
}

func (s *lateEnds) Increment(ctx context.Context, key string, n int64, rate limiter.Rate) (limiter.Context, error) {
	lctx, err := s.Store.Increment(ctx, key, n, rate)
	if s.calls.Add(1) > 1 {
		lctx.Reset++
	}
	return lctx, err
}

// TestRateLimitHeadersCountDown: X-RateLimit-Remaining counts down by one
// per request across many responses (values carved from shared slabs), and
// each response keeps the values it was given after later ones are written.
// X-RateLimit-Reset stays the window's, lease after lease, even when a
// lease reads the window's end late: it changed by a second within one
// window (CI, beside CPU burners, at response 192).
func TestRateLimitHeadersCountDown(t *testing.T) {
	const limit, requests = 1000, 300
	for _, tc := range []struct {
		name string
		late bool
	}{{"one window", false}, {"leases reading the end late", true}} {
		t.Run(tc.name, func(t *testing.T) {
			shared := redisStore(t, dbtest.NewRedis(t, redisDB), "rl-hdr-"+dbtest.Unique())
			if tc.late {
				shared = &lateEnds{Store: shared}
			}
			e := rateEngine(t, middleware.NewLeaseStore(shared, 0, 100), strconv.Itoa(limit)+"-M", nil)
			var got []http.Header
			for range requests {
				w := get(e, "")
				if w.Code != http.StatusOK {
					t.Fatalf("status %d, want 200", w.Code)
				}
				got = append(got, w.Header())
			}
			reset := got[0].Get("X-RateLimit-Reset")
			for i, h := range got {
				if r := h.Get("X-RateLimit-Remaining"); r != strconv.Itoa(limit-1-i) {
					t.Errorf("response %d: X-RateLimit-Remaining %q, want %d", i, r, limit-1-i)
				}
				if l := h.Get("X-RateLimit-Limit"); l != strconv.Itoa(limit) {
					t.Errorf("response %d: X-RateLimit-Limit %q, want %d", i, l, limit)
				}
				if r := h.Get("X-RateLimit-Reset"); r != reset || r == "" {
					t.Errorf("response %d: X-RateLimit-Reset %q, want %q (one window)", i, r, reset)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps one header map and no
// bytes, so that only the handler's own allocations are counted.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w discardWriter) WriteHeader(int)             {}

// TestRateLimitCountedRequestAllocates: a counted request that the lease
// admits — client key, decision, three X-RateLimit-* headers — allocates
// nothing on average (a slab of header values is one allocation per
// many requests), for one hot client and for many taking turns. Not
// parallel: AllocsPerRun counts the whole process.
func TestRateLimitCountedRequestAllocates(t *testing.T) {
	cases := []struct {
		name    string
		clients int
	}{
		{"one hot client", 1},
		{"50 clients in turn", 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := middleware.NewLeaseStore(redisStore(t, dbtest.NewRedis(t, redisDB), "rl-alloc-"+dbtest.Unique()), 0.01, 100)
			handler := middleware.RateLimit(limiter.New(store, limiter.Rate{Period: 3_600_000_000_000, Limit: 1_000_000_000}), dbtest.Logger(t), nil)
			// One gin.Context for every run, as gin's pool would lend it
			// (the race detector's sync.Pool drops items, so the engine's
			// own pool would allocate contexts here).
			w := discardWriter{h: http.Header{}}
			c, e := gin.CreateTestContext(w)
			e.Use(handler)
			e.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
			c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
			var addrs []string
			for i := range tc.clients {
				addrs = append(addrs, "10.9.0."+strconv.Itoa(i+1)+":1234")
				c.Request.RemoteAddr = addrs[i]
				e.HandleContext(c) // takes the client's lease
			}
			i := 0
			allocs := testing.AllocsPerRun(1000, func() {
				c.Request.RemoteAddr = addrs[i%len(addrs)]
				i++
				e.HandleContext(c)
			})
			if allocs != 0 {
				t.Errorf("%v allocations per counted request, want 0", allocs)
			}
			if w.h.Get("X-RateLimit-Limit") != "1000000000" || w.h.Get("X-RateLimit-Remaining") == "" || w.h.Get("X-RateLimit-Reset") == "" {
				t.Errorf("headers: %v, want the limit, the remaining count and the reset", w.h)
			}
		})
	}
}

// TestRateLimitHeadersNameTheTighterLimit: where two limits count one
// request (the per-IP limit, then the order budget), the X-RateLimit-*
// headers describe the one that leaves the client fewer requests, so a
// client reading them is not told 59 left one request before a 429; the
// 429 describes the limit that refused.
func TestRateLimitHeadersNameTheTighterLimit(t *testing.T) {
	tests := []struct {
		name          string
		first, second int64    // each limit's requests per minute, in chain order
		want          []string // each response: status limit/remaining
	}{
		{"the first limit is tighter", 3, 60, []string{"200 3/2", "200 3/1", "200 3/0", "429 3/0"}},
		{"the second limit is tighter", 60, 2, []string{"200 2/1", "200 2/0", "429 2/0"}},
		{"they meet", 3, 4, []string{"200 3/2", "200 3/1", "200 3/0", "429 3/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gin.SetMode(gin.TestMode)
			mem := func(limit int64) *limiter.Limiter {
				return limiter.New(memory.NewStore(), limiter.Rate{Period: time.Minute, Limit: limit})
			}
			e := gin.New()
			e.Use(middleware.RateLimit(mem(tt.first), dbtest.Logger(t), nil),
				middleware.RateLimitNamed("order:", mem(tt.second), nil, dbtest.Logger(t), nil))
			e.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
			for i, want := range tt.want {
				w := get(e, "")
				got := fmt.Sprintf("%d %s/%s", w.Code, w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"))
				if got != want {
					t.Errorf("response %d: %s, want %s", i, got, want)
				}
				byBudget := strings.Contains(w.Body.String(), "order budget")
				if w.Code == http.StatusTooManyRequests && byBudget != (tt.second < tt.first) {
					t.Errorf("response %d: the 429 says %s, want the order budget named only when it refused", i, w.Body)
				}
			}
		})
	}
}
