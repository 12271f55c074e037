package e2e

import (
	"context"
	"errors"
	"math"
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
	for i := range apis {
		apis[i] = newAPI(t, gw.URL, client.WithRetry(client.RetryPolicy{MaxElapsed: 3 * time.Second}))
	}
	link.SetDown(true)
	var calls, succeeded, unavailable atomic.Int64
	refused := make([]atomic.Int64, fleet) // each caller's calls that ended unavailable
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
					case errors.Is(err, client.ErrUnavailable):
						unavailable.Add(1)
						refused[i].Add(1)
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
	retries := int64(sent) - n
	allowed := fleet*client.DefaultBudgetTokens/2 + int64(math.Ceil(client.DefaultBudgetRatio*float64(ok)))
	t.Logf("%d calls in %s (%d ok, %d unavailable): %d requests reached the service, %d retries; the budgets allow %d, retries without a budget up to %d",
		n, outage, ok, unavailable.Load(), sent, retries, allowed, 2*n)
	if ok > n/10 {
		t.Fatalf("%d of %d calls succeeded: the test measured no outage", ok, n)
	}
	if retries < 0 || retries > allowed {
		t.Errorf("%d retries reached the service during the outage, want at most %d (the fleet's budgets)", retries, allowed)
	}
	// A caller whose calls ended unavailable at least half a bucket's
	// worth of times failed that many attempts a retry could fix: its
	// budget ran down to the half where it stops retrying. (Beside CPU
	// burners most of one caller's calls once ended otherwise, timed out
	// on the client's side, and its budget stayed above the half.) At
	// least one caller must be such a caller.
	measured, full := 0, 0
	for i, api := range apis {
		if refused[i].Load() < client.DefaultBudgetTokens/2 {
			continue
		}
		measured++
		if tok := api.Budget().Tokens(); tok > client.DefaultBudgetTokens/2 {
			if full++; full > 1 {
				continue // one example is enough
			}
			t.Errorf("client %d ends the outage with %.1f tokens after %d calls answered unavailable, want ≤ %d: its budget never ran down",
				i, tok, refused[i].Load(), client.DefaultBudgetTokens/2)
		}
	}
	t.Logf("%d of %d callers had %d calls or more answered unavailable", measured, fleet, client.DefaultBudgetTokens/2)
	if measured == 0 {
		t.Errorf("no caller had %d calls answered unavailable: no budget was put to the test", client.DefaultBudgetTokens/2)
	}
}
