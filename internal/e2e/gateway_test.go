package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// exchange is one request that crossed a gateway, as the service saw it.
type exchange struct {
	method, path, key string // key: the Idempotency-Key header
	arrived, answered time.Time
	status            int
	retryAfter        time.Duration // the answer's Retry-After in seconds, 0 if none
	lost              bool          // the service answered, the client got a 502
}

// gateway is a recording reverse proxy in front of a running app: it
// counts and times every request and answer, so a test can check what a
// client really sent, from the server's side. It is an HTTP hop of the
// test, not a stand-in: every request reaches the real service.
type gateway struct {
	URL string
	mu  sync.Mutex
	log []exchange
	// lose, when set, is asked about each answer of the service; true
	// drops it after the service acted and answers 502 instead, as a
	// gateway that lost the connection upstream would.
	lose func(exchange) bool
}

var errLost = errors.New("gateway test: answer dropped")

// newGateway starts a gateway to base. clientIP, when set, is sent as
// X-Forwarded-For, so a service that trusts 127.0.0.1 rate-limits this
// test's traffic apart from every other test's.
func newGateway(t *testing.T, base, clientIP string) *gateway {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if clientIP != "" {
				r.Out.Header.Set("X-Forwarded-For", clientIP)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			ex := exchange{status: resp.StatusCode, retryAfter: time.Duration(ra) * time.Second}
			return g.record(resp.Request, ex)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, errLost) {
				_ = g.record(r, exchange{status: http.StatusBadGateway})
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(withArrival(r.Context(), time.Now()))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// record logs one exchange, and reports errLost when the answer is to be
// dropped.
func (g *gateway) record(r *http.Request, ex exchange) error {
	ex.method, ex.path, ex.key = r.Method, r.URL.Path, r.Header.Get("Idempotency-Key")
	ex.arrived, ex.answered = arrival(r.Context()), time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	ex.lost = g.lose != nil && g.lose(ex)
	g.log = append(g.log, ex)
	if ex.lost {
		return errLost
	}
	return nil
}

// exchanges returns what crossed the gateway so far, in answer order.
func (g *gateway) exchanges() []exchange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]exchange(nil), g.log...)
}

type arrivalKey struct{}

func withArrival(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, arrivalKey{}, at)
}

func arrival(ctx context.Context) time.Time {
	at, _ := ctx.Value(arrivalKey{}).(time.Time)
	return at
}
