package e2e

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/client"
)

// TestClientFleetRetryBudgetDuringOutage: PostgreSQL goes away for 5 s
// under 50 callers, each a separate service with its own client and its
// own retry budget, each reading uncached products at a steady pace. The
// gateway counts what reaches the service: the retries on top of the
// callers' own requests stay within what the budgets allow (half of each
// bucket, plus a tenth of a retry per success), not the 2 extra attempts
// per call that retries without a budget would add to the outage.
func TestClientFleetRetryBudgetDuringOutage(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{
		"BREAKER_FAILURES": "3", "BREAKER_OPEN_MIN": "1s", "BREAKER_OPEN_MAX": "1s", "DB_ACQUIRE_TIMEOUT": "500ms",
		// The deployment's defaults otherwise: no write keys, a per-key
		// budget (set: with RATE_LIMIT off, an unset one follows it off).
		"RATE_LIMIT_KEY": "1000-S", "API_KEYS": "",
	})
	link := proxyDatabase(t, env)
	const fleet = 50
	ids := make([]int64, fleet) // uncached: the test's own namespace
	for i := range ids {
		ids[i] = productID(t)
	}
	a := launchApp(t, env)
	gw := newGateway(t, a.waitListening(), "")

	const outage, every = 5 * time.Second, 400 * time.Millisecond
	apis := make([]*client.Client, fleet)
	// Every attempt the fleet sends, counted as it leaves: on a loaded
	// machine some never reach the gateway before their caller gives up,
	// so the gateway's count can fall below the calls (-37 retries once,
	// beside CPU burners), and retries are counted here.
	var attempts atomic.Int64
	hc := &http.Client{Transport: countingTransport{next: http.DefaultTransport, n: &attempts}}
	for i := range apis {
		apis[i] = newAPI(t, gw.URL, client.WithRetry(client.RetryPolicy{MaxElapsed: 3 * time.Second}), client.WithHTTPClient(hc))
	}
	link.SetDown(true)
	var calls, succeeded, unavailable atomic.Int64
	// Each caller's calls that ended unavailable, and that succeeded.
	refused, served := make([]atomic.Int64, fleet), make([]atomic.Int64, fleet)
	var otherErr atomic.Pointer[error]
	var callers, inflight sync.WaitGroup
	start := time.Now()
	for i, api := range apis {
		callers.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for time.Since(start) < outage {
				inflight.Go(func() {
					calls.Add(1)
					_, _, err := api.GetProduct(context.Background(), ids[i])
					switch {
					case err == nil:
						succeeded.Add(1)
						served[i].Add(1)
					case errors.Is(err, client.ErrUnavailable):
						unavailable.Add(1)
						refused[i].Add(1)
					default:
						otherErr.CompareAndSwap(nil, &err)
					}
				})
				<-tick.C
			}
		})
	}
	callers.Wait()
	inflight.Wait()
	link.SetDown(false)

	sent := 0
	for _, ex := range gw.exchanges() {
		if strings.HasPrefix(ex.path, "/products/") {
			sent++
		}
	}
	n, ok := calls.Load(), succeeded.Load()
	retries := attempts.Load() - n
	allowed := fleet*client.DefaultBudgetTokens/2 + int64(math.Ceil(client.DefaultBudgetRatio*float64(ok)))
	t.Logf("%d calls in %s (%d ok, %d unavailable): %d attempts sent, %d retries, %d requests reached the service; the budgets allow %d retries, retries without a budget up to %d",
		n, outage, ok, unavailable.Load(), attempts.Load(), retries, sent, allowed, 2*n)
	if e := otherErr.Load(); e != nil {
		t.Logf("a call that ended otherwise: %v", *e)
	}
	if ok > n/10 {
		t.Fatalf("%d of %d calls succeeded: the test measured no outage", ok, n)
	}
	if retries < 0 || retries > allowed {
		t.Errorf("%d retries sent during the outage, want at most %d (the fleet's budgets)", retries, allowed)
	}
	// Every call that ended unavailable failed at least one attempt a
	// retry could fix, and each such failure takes a token (a success
	// gives back a tenth of one): a caller's bucket ends at most that far
	// below full. Bounded per caller by what it saw, not by a count every
	// caller must reach: beside CPU burners most calls of a run once ended
	// otherwise (timed out on the client's side, which takes no token),
	// and no caller saw half a bucket of unavailable answers.
	for i, api := range apis {
		k, ok := refused[i].Load(), served[i].Load()
		limit := max(0, float64(client.DefaultBudgetTokens-k)) + client.DefaultBudgetRatio*float64(ok) + 1e-9
		if tok := api.Budget().Tokens(); tok > limit {
			t.Errorf("client %d ends the outage with %.1f tokens after %d calls answered unavailable and %d served, want ≤ %.1f: its budget did not run down",
				i, tok, k, ok, limit)
			break // one example is enough
		}
	}
	if unavailable.Load() == 0 {
		t.Errorf("no call was answered unavailable: no budget was put to the test")
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
