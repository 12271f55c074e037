package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// edge is a minimal shared cache standing for a CDN in front of the service.
// It follows the parts of RFC 9111 and RFC 5861 the template relies on: it
// stores a public 200 with max-age, counts a copy's age from the Age header
// plus its own residence time, serves a fresh copy, and within
// stale-while-revalidate serves the stale copy at once while one background
// request revalidates it with If-None-Match. It is hand-written because no
// RFC 9111 cache with stale-while-revalidate is served by the module proxy
// here; it reads the service's directives, it does not know them.
type edge struct {
	origin  http.Client
	delay   time.Duration // added to every origin request: the CDN is far away
	calls   atomic.Int64  // requests that reached the service
	mu      sync.Mutex
	copy    *edgeCopy
	pending bool // a revalidation is running
	wg      sync.WaitGroup
	revals  []int // status of each revalidation
}

type edgeCopy struct {
	body        []byte
	etag        string
	receivedAt  time.Time
	age         time.Duration // the Age header when received
	maxAge, swr time.Duration
}

// directive returns the seconds of a Cache-Control directive, or -1.
func directive(cc, name string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), name+"="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return time.Duration(n) * time.Second
			}
		}
	}
	return -1
}

func (e *edge) fetch(url, etag string) (*http.Response, []byte, error) {
	e.calls.Add(1)
	time.Sleep(e.delay)
	req, _ := http.NewRequest("GET", url, nil)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := e.origin.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// store keeps resp if it is cacheable (a 304 refreshes the copy's age).
func (e *edge) store(resp *http.Response, body []byte, prev *edgeCopy) {
	cc := resp.Header.Get("Cache-Control")
	maxAge := directive(cc, "max-age")
	if !strings.Contains(cc, "public") || maxAge < 0 {
		e.copy = nil
		return
	}
	age, _ := strconv.Atoi(resp.Header.Get("Age"))
	c := &edgeCopy{body: body, etag: resp.Header.Get("ETag"), receivedAt: time.Now(),
		age: time.Duration(age) * time.Second, maxAge: maxAge, swr: max(0, directive(cc, "stale-while-revalidate"))}
	if resp.StatusCode == http.StatusNotModified && prev != nil {
		c.body = prev.body
	}
	e.copy = c
}

// get answers like a CDN: "HIT", "STALE" (revalidating) or "MISS".
func (e *edge) get(url string) (string, []byte, error) {
	e.mu.Lock()
	if c := e.copy; c != nil {
		age := c.age + time.Since(c.receivedAt)
		if age < c.maxAge {
			e.mu.Unlock()
			return "HIT", c.body, nil
		}
		if age < c.maxAge+c.swr {
			if !e.pending {
				e.pending = true
				e.wg.Go(func() { e.revalidate(url, c) })
			}
			e.mu.Unlock()
			return "STALE", c.body, nil
		}
	}
	e.mu.Unlock()
	resp, body, err := e.fetch(url, "")
	if err != nil {
		return "", nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if resp.StatusCode == http.StatusOK {
		e.store(resp, body, nil)
	}
	return "MISS", body, nil
}

func (e *edge) revalidate(url string, c *edgeCopy) {
	resp, body, err := e.fetch(url, c.etag)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending = false
	if err != nil {
		e.revals = append(e.revals, 0)
		return
	}
	e.revals = append(e.revals, resp.StatusCode)
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotModified {
		e.store(resp, body, c)
	}
}

// TestEdgeServesStaleWhileRevalidating puts the edge cache in front of the
// service and sends bursts of concurrent requests for one product: while
// fresh, none reaches the service; once stale, every request is answered at
// once from the stale copy, and one revalidation (a 304) reaches it.
func TestEdgeServesStaleWhileRevalidating(t *testing.T) {
	t.Parallel()
	const burst = 50
	id := productID(t)
	env := testEnv(t)
	env["CACHE_SOFT_TTL"], env["CACHE_TTL"] = "1s", "1m"
	base, _ := startApp(t, env)
	url := fmt.Sprint(base, "/products/", id)
	e := &edge{origin: http.Client{Timeout: 10 * time.Second}, delay: 300 * time.Millisecond}
	t.Cleanup(e.wg.Wait)

	if status, _, err := e.get(url); err != nil || status != "MISS" {
		t.Fatalf("first request: got %q, %v; want MISS", status, err)
	}
	type answer struct {
		status string
		took   time.Duration
		err    error
	}
	run := func() []answer {
		out := make([]answer, burst)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() {
				start := time.Now()
				s, _, err := e.get(url)
				out[i] = answer{s, time.Since(start), err}
			})
		}
		wg.Wait()
		return out
	}

	for i, a := range run() {
		if a.err != nil || a.status != "HIT" {
			t.Errorf("fresh burst, request %d: got %q, %v; want HIT", i, a.status, a.err)
		}
	}
	if n := e.calls.Load(); n != 1 {
		t.Errorf("service requests after the fresh burst: got %d, want 1", n)
	}

	time.Sleep(1200 * time.Millisecond) // past max-age=1
	for i, a := range run() {
		if a.err != nil || a.status != "STALE" || a.took >= e.delay {
			t.Errorf("stale burst, request %d: got %q in %v, %v; want STALE faster than the service's %v",
				i, a.status, a.took, a.err, e.delay)
		}
	}
	e.wg.Wait()
	if n := e.calls.Load(); n != 2 {
		t.Errorf("service requests after the stale burst: got %d, want 2 (one revalidation)", n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.revals) != 1 || e.revals[0] != http.StatusNotModified {
		t.Errorf("revalidations: got statuses %v, want one 304 (the product did not change)", e.revals)
	}
}
