package middleware_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	limiter "github.com/ulule/limiter/v3"
	memstore "github.com/ulule/limiter/v3/drivers/store/memory"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/middleware"
)

// redisDB is the logical Redis database of this package's tests.
const redisDB = 5

// peer is the TCP peer of every request: a load balancer, say.
const peer = "10.1.2.3:1234"

// rateEngine is a gin engine with RateLimit(store, rate) in front of one
// route; trusted are the proxies whose X-Forwarded-For gin believes.
func rateEngine(t *testing.T, store limiter.Store, rate string, trusted []string) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r, err := limiter.NewRateFromFormatted(rate)
	if err != nil {
		t.Fatalf("rate %q: %v", rate, err)
	}
	e := gin.New()
	if err := e.SetTrustedProxies(trusted); err != nil {
		t.Fatalf("SetTrustedProxies(%v): %v", trusted, err)
	}
	e.Use(middleware.RateLimit(limiter.New(store, r), dbtest.Logger(t), nil))
	e.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
	return e
}

// redisStore is ulule's Redis store on client with a prefix of its own, so
// tests and reruns never share a budget by accident.
func redisStore(t *testing.T, client *redis.Client, prefix string) limiter.Store {
	t.Helper()
	st, err := redisstore.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("redis store: %v", err)
	}
	return st
}

func get(e http.Handler, forwardedFor string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = peer
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

// TestRateLimitXForwardedFor: without trusted proxies the peer is the client
// and rotating X-Forwarded-For buys nothing; with the peer trusted, each
// forwarded client gets its own budget.
func TestRateLimitXForwardedFor(t *testing.T) {
	rdb := dbtest.NewRedis(t, redisDB)
	cases := []struct {
		name    string
		trusted []string
		wantOK  int
	}{
		{"untrusted peer: one budget", nil, 10},
		{"trusted peer: budget per forwarded client", []string{"10.1.2.3"}, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := rateEngine(t, redisStore(t, rdb, "rl-xff-"+dbtest.Unique()), "10-M", tc.trusted)
			ok, limited := 0, 0
			var last429 *httptest.ResponseRecorder
			for i := range 100 {
				switch w := get(e, fmt.Sprintf("198.51.100.%d", i+1)); w.Code {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					limited++
					last429 = w
				default:
					t.Fatalf("request %d: got status %d, want 200 or 429", i, w.Code)
				}
			}
			if ok != tc.wantOK || limited != 100-tc.wantOK {
				t.Fatalf("got %d OK and %d limited, want %d and %d", ok, limited, tc.wantOK, 100-tc.wantOK)
			}
			if last429 != nil {
				check429(t, last429, 10)
			}
		})
	}
}

// check429 checks the headers of a 429 under an N-M rate.
func check429(t *testing.T, w *httptest.ResponseRecorder, limit int) {
	t.Helper()
	h := w.Header()
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After: got %q, want whole seconds in [1, 60]", h.Get("Retry-After"))
	}
	if got := h.Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
		t.Errorf("X-RateLimit-Limit: got %q, want %d", got, limit)
	}
	if got := h.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining: got %q, want 0", got)
	}
	reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if now := time.Now().Unix(); err != nil || reset < now || reset > now+61 {
		t.Errorf("X-RateLimit-Reset: got %q, want a unix time within the next minute of %d", h.Get("X-RateLimit-Reset"), now)
	}
}

func TestClientKey(t *testing.T) {
	cases := []struct{ in, want string }{
		{"192.0.2.1", "192.0.2.1"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:eeee:dddd:cccc", "2001:db8:1:2::/64"}, // same /64, same bucket
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},                  // next /64, its own
		{"::ffff:192.0.2.7", "192.0.2.7"},                         // IPv4-mapped is IPv4
		{"not-an-ip", "not-an-ip"},
	}
	for _, tc := range cases {
		if got := middleware.ClientKey(tc.in); got != tc.want {
			t.Errorf("ClientKey(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
	if a, b := middleware.ClientKey("2001:db8:1:2::1"), middleware.ClientKey("2001:db8:1:3::1"); a == b {
		t.Errorf("two /64 networks share the key %q, want different keys", a)
	}
}

// TestRateLimitSharedAcrossInstances: two instances (two limiters on two
// Redis clients) count one client in one budget.
func TestRateLimitSharedAcrossInstances(t *testing.T) {
	prefix := "rl-shared-" + dbtest.Unique()
	a := rateEngine(t, redisStore(t, dbtest.NewRedis(t, redisDB), prefix), "10-M", nil)
	b := rateEngine(t, redisStore(t, dbtest.NewRedis(t, redisDB), prefix), "10-M", nil)
	ok := map[string]int{}
	for i := range 20 {
		name, e := "a", a
		if i%2 == 1 {
			name, e = "b", b
		}
		if w := get(e, ""); w.Code == http.StatusOK {
			ok[name]++
		}
	}
	if total := ok["a"] + ok["b"]; total != 10 || ok["a"] != 5 || ok["b"] != 5 {
		t.Errorf("got %d OK on a and %d on b, want 5 and 5 (10 in one shared budget)", ok["a"], ok["b"])
	}
}

// TestFailoverStoreCountsPerInstance: when the shared store cannot be built
// or does not answer, requests are limited by the memory fallback and the
// fallback is reported.
func TestFailoverStoreCountsPerInstance(t *testing.T) {
	cases := []struct {
		name      string
		newShared func(t *testing.T) func() (limiter.Store, error)
	}{
		{"constructor fails", func(*testing.T) func() (limiter.Store, error) {
			return func() (limiter.Store, error) { return nil, errors.New("redis unreachable") }
		}},
		{"redis link cut after the store was built", func(t *testing.T) func() (limiter.Store, error) {
			link := dbtest.NewProxy(t, dbtest.RedisAddr())
			client := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = client.Close() })
			st := redisStore(t, client, "rl-cut-"+dbtest.Unique())
			link.SetDown(true)
			return func() (limiter.Store, error) { return st, nil }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fallbacks atomic.Int64
			store := middleware.NewFailoverStore(tc.newShared(t),
				memstore.NewStoreWithOptions(limiter.StoreOptions{Prefix: "mem", CleanUpInterval: time.Minute}),
				time.Minute, func(error) { fallbacks.Add(1) })
			e := rateEngine(t, store, "3-M", nil)
			var got []int
			for range 5 {
				got = append(got, get(e, "").Code)
			}
			want := []int{200, 200, 200, 429, 429}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("statuses: got %v, want %v", got, want)
			}
			if n := fallbacks.Load(); n != 5 {
				t.Errorf("onFallback calls: got %d, want 5 (one per request)", n)
			}
		})
	}
}

// TestFailoverStoreSetsAFailedStoreAside: once the shared store fails,
// the fallback alone counts for retryGap, and the shared store is asked
// again after it. Each count asked a hung Redis again, waiting for its I/O
// timeout every time (five requests, five attempts).
func TestFailoverStoreSetsAFailedStoreAside(t *testing.T) {
	link := dbtest.NewProxy(t, dbtest.RedisAddr())
	client := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	shared := &countingStore{Store: redisStore(t, client, "rl-aside-"+dbtest.Unique())}
	const gap = 300 * time.Millisecond
	store := middleware.NewFailoverStore(func() (limiter.Store, error) { return shared, nil },
		memstore.NewStoreWithOptions(limiter.StoreOptions{Prefix: "mem", CleanUpInterval: time.Minute}), gap, nil)
	e := rateEngine(t, store, "100-M", nil)

	link.SetDown(true)
	for range 5 {
		if code := get(e, "").Code; code != http.StatusOK {
			t.Fatalf("with the shared store down: %d, want 200 from the fallback", code)
		}
	}
	if n := shared.gets.Load(); n != 1 {
		t.Errorf("five counts with the shared store down: it was asked %d times, want once (then set aside)", n)
	}

	link.SetDown(false)
	time.Sleep(gap + 50*time.Millisecond)
	get(e, "")
	if n := shared.gets.Load(); n != 2 {
		t.Errorf("a count after retryGap: the shared store asked %d times in all, want 2 (asked again)", n)
	}
}
