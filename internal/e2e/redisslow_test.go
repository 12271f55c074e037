package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
	"github.com/stampede-guard/api/repo"
)

// slowRequestTimeout is REQUEST_TIMEOUT in the slow-Redis tests: every
// answer must come within it.
const slowRequestTimeout = 4 * time.Second

// TestRedisSlowKeepsDeadline slows (never cuts) the link to Redis under a
// running app, past and within its 500 ms I/O timeout. The cache read path
// (a product cached before), the lock path (a burst on a cold product),
// and the rate limiter (every answer carries its headers: it decided)
// each answer 200 within REQUEST_TIMEOUT, loading from PostgreSQL where
// Redis is too slow; past the timeout, the Redis breaker opens.
func TestRedisSlowKeepsDeadline(t *testing.T) {
	tests := []struct {
		name        string
		delay       time.Duration
		wantBreaker bool // the Redis breaker opens
	}{
		{"slower than the I/O timeout", 2 * time.Second, true},
		{"slow within the I/O timeout", 150 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, map[string]string{"RATE_LIMIT": "1000-S", "REQUEST_TIMEOUT": slowRequestTimeout.String()})
			link := proxyRedis(t, env)
			base, _ := startApp(t, env)
			defer link.SetDelay(0) // before the app's shutdown
			warm := productID(t)
			for _, want := range []string{"MISS", "HIT"} {
				if a := timedGet(fmt.Sprintf("%s/products/%d", base, warm)); a.status != http.StatusOK || a.header.Get("X-Cache") != want {
					t.Fatalf("GET before slowing the link: %d X-Cache %q (%v), want 200 %s", a.status, a.header.Get("X-Cache"), a.err, want)
				}
			}
			link.SetDelay(tt.delay)
			cold := productID(t)
			paths := []string{fmt.Sprintf("/products/%d", warm)} // the read path
			for range 10 {
				paths = append(paths, fmt.Sprintf("/products/%d", cold)) // the lock path
			}
			for range 3 {
				paths = append(paths, fmt.Sprintf("/products/%d", productID(t)))
			}
			var slowest time.Duration
			for i, a := range getAll(base, paths) {
				slowest = max(slowest, a.elapsed)
				if a.status != http.StatusOK || a.elapsed >= slowRequestTimeout {
					t.Errorf("GET %s with Redis %s slow: %d after %s (%v), want 200 within %s",
						paths[i], tt.delay, a.status, a.elapsed.Round(time.Millisecond), a.err, slowRequestTimeout)
				}
				if got := a.header.Get("X-RateLimit-Limit"); got != "1000" {
					t.Errorf("GET %s: X-RateLimit-Limit %q, want 1000 (the limiter answered)", paths[i], got)
				}
			}
			t.Logf("Redis %s slow: %d reads, the slowest answered in %s", tt.delay, len(paths), slowest.Round(time.Millisecond))
			if tt.wantBreaker {
				dbtest.WaitFor(t, "the Redis breaker open", func() bool {
					s := breakerState(t, base, "redis")
					return s == "open" || s == "half-open"
				})
			}
		})
	}
}

// getAll sends every GET at once and returns the answers in order.
func getAll(base string, paths []string) []answer {
	out := make([]answer, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { out[i] = timedGet(base + p) })
	}
	wg.Wait()
	return out
}

// TestWarmUpWithRedisDownOrSlow: with HOT_KEYS set and Redis down, or slow
// enough to cost each key about a second without failing it, the instance
// still turns ready within the warm-up's budget (repo.WarmBudget), and
// logs how far the warm-up got.
func TestWarmUpWithRedisDownOrSlow(t *testing.T) {
	const keys = 60
	ids := make([]string, keys)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	// The budget, plus the start (migrations on a loaded machine).
	bound := repo.WarmBudget(keys) + 10*time.Second
	tests := []struct {
		name      string
		breakLink func(*netproxy.Proxy)
		all       bool // every key loaded (from PostgreSQL), within the budget
	}{
		{"down", func(l *netproxy.Proxy) { l.SetDown(true) }, true},
		{"slow", func(l *netproxy.Proxy) { l.SetDelay(150 * time.Millisecond) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, map[string]string{"HOT_KEYS": strings.Join(ids, ",")})
			link := proxyRedis(t, env)
			tt.breakLink(link)
			start := time.Now()
			a := launchApp(t, env)
			defer func() { link.SetDown(false); link.SetDelay(0) }() // before the app's shutdown
			base := a.waitListening()
			for {
				resp, _, err := send(http.MethodGet, base+"/readyz", nil, "")
				if err == nil && resp.StatusCode == http.StatusOK {
					break
				}
				if time.Since(start) > bound {
					t.Fatalf("not ready %s after the start with Redis %s (warm-up budget %s)", bound, tt.name, repo.WarmBudget(keys))
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("ready %s after the start with Redis %s", time.Since(start).Round(time.Millisecond), tt.name)
			recs := a.logs.records("warm-up done")
			if len(recs) != 1 {
				t.Fatalf("warm-up log lines: got %d, want 1", len(recs))
			}
			// Down, a read fails at once and loads from PostgreSQL without
			// storing: every key warmed, none left to the budget's end.
			if warmed, _ := recs[0]["warmed"].(float64); tt.all && (warmed != keys || recs[0]["err"] != nil) {
				t.Errorf("warm-up with Redis %s: warmed %v of %d, err %v; want all, no error", tt.name, recs[0]["warmed"], keys, recs[0]["err"])
			}
		})
	}
}
