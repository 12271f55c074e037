package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/breaker"
)

// breakerWent reports whether the service logged breaker (e.g.
// "postgres_main") moving to state to.
func breakerWent(logs *logCapture, breaker, to string) bool {
	for _, rec := range logs.records("breaker state") {
		if rec["breaker"] == breaker && rec["to"] == to {
			return true
		}
	}
	return false
}

// TestBreakerDatabaseOutage cuts the link to PostgreSQL under a running
// service: cached products are served stale, the breaker opens after a few
// failures and then refuses at once with 503 + Retry-After instead of
// letting every request wait for its own timeout, readiness goes down, and
// the metrics and the admin feed show the probe schedule; when the link
// returns, the breaker's own probe closes it, without a restart.
func TestBreakerDatabaseOutage(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{
		"BREAKER_FAILURES": "3", "BREAKER_OPEN_MIN": "100ms", "BREAKER_OPEN_MAX": "1s", "DB_ACQUIRE_TIMEOUT": "500ms",
		"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "200ms", "L1_TTL": "0", "RATE_LIMIT": "off",
		// The deployment's defaults otherwise: no write keys, a per-key
		// budget (set: with RATE_LIMIT off, an unset one follows it off).
		"RATE_LIMIT_KEY": "1000-S", "API_KEYS": "",
	})
	link := proxyDatabase(t, env)
	warm := productID(t)
	var next int64 // the last uncached id read
	uncached := func() string { next = productID(t); return fmt.Sprintf("/products/%d", next) }

	a := launchApp(t, env)
	base := a.waitListening()
	m := scrape(t, base)
	for _, b := range []string{"postgres_main", "postgres_reports", "redis"} {
		for _, name := range []string{"stampede_breaker_state", "stampede_breaker_next_probe_seconds", "stampede_breaker_failed_probes"} {
			if v, ok := m[name+`{breaker="`+b+`"}`]; !ok || v != 0 {
				t.Errorf("%s{breaker=%q} at start: got %v (present %v), want 0", name, b, v, ok)
			}
		}
	}
	warmURL := fmt.Sprintf("%s/products/%d", base, warm)
	if got := timedGet(warmURL); got.status != http.StatusOK {
		t.Fatalf("warm-up GET: got %d (%v), want 200", got.status, got.err)
	}

	link.SetDown(true)
	time.Sleep(300 * time.Millisecond) // past the soft TTL
	if got := timedGet(warmURL); got.status != http.StatusOK || got.header.Get("X-Cache") != "STALE" {
		t.Errorf("cached product during the outage: got %d X-Cache %q (%v), want 200 STALE", got.status, got.header.Get("X-Cache"), got.err)
	}

	var tries []int
	for len(tries) < 20 && !breakerWent(a.logs, "postgres_main", "open") {
		tries = append(tries, timedGet(base+uncached()).status)
	}
	if !breakerWent(a.logs, "postgres_main", "open") {
		t.Fatalf("breaker did not open after %d failing reads (statuses %v)", len(tries), tries)
	}
	for i, s := range tries {
		if s != http.StatusServiceUnavailable && s != http.StatusGatewayTimeout {
			t.Errorf("failing read %d: got %d, want 503 or 504", i, s)
		}
	}
	got := timedGet(base + uncached())
	ra, _ := strconv.Atoi(got.header.Get("Retry-After"))
	// The bound is the configured DB_ACQUIRE_TIMEOUT (500 ms), the wait
	// a read let through to the pool may spend on a connection; the
	// refusal does no I/O at all, so one loopback HTTP round trip has
	// ten times what it needs even on a loaded 2-core machine.
	if got.status != http.StatusServiceUnavailable || ra < 1 || got.elapsed >= 500*time.Millisecond {
		t.Errorf("read with the breaker open: got %d Retry-After %q after %s (%v), want 503, Retry-After ≥ 1, within DB_ACQUIRE_TIMEOUT (500ms)",
			got.status, got.header.Get("Retry-After"), got.elapsed, got.err)
	}
	// Readiness speaks for this instance only: a shared outage
	// shows in the body, never in the status.
	if resp, body := call(t, "GET", base+"/readyz", nil, ""); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"postgres_breaker":"breaker open"`) {
		t.Errorf("/readyz during the outage: got %d %s, want 200 with postgres_breaker \"breaker open\"", resp.StatusCode, body)
	}
	// While it stays down the breaker probes and backs off: failed probes
	// show in the metrics and in the admin feed, with the time to the next.
	eventually(t, 10*time.Second, "failed probes reported", func() (bool, string) {
		m := scrape(t, base)
		failed := m[`stampede_breaker_failed_probes{breaker="postgres_main"}`]
		next := m[`stampede_breaker_next_probe_seconds{breaker="postgres_main"}`]
		return failed >= 2 && next <= 1, fmt.Sprintf("failed probes %v, next probe in %vs (cap 1s)", failed, next)
	})
	if d, ok := adminBreakers(t, a)["postgres_main"]; !ok || d.State.String() == "closed" || d.FailedProbes < 2 {
		t.Errorf("admin feed during the outage: got %+v (present %v), want open or half-open with ≥ 2 failed probes", d, ok)
	}

	link.SetDown(false)
	eventually(t, 10*time.Second, "service recovered after the database came back", func() (bool, string) {
		// An id is used until it loads, so few ids suffice: a refused read
		// leaves it uncached.
		read := timedGet(fmt.Sprintf("%s/products/%d", base, next))
		if read.status == http.StatusOK {
			next = productID(t)
		}
		ready, body, err := send("GET", base+"/readyz", nil, "")
		healthy := err == nil && ready.StatusCode == http.StatusOK && strings.Contains(string(body), `"degraded":false`)
		closed := breakerWent(a.logs, "postgres_main", "closed")
		return read.status == http.StatusOK && healthy && closed,
			fmt.Sprintf("read %d, /readyz %s (%v), breaker closed logged %v", read.status, body, err, closed)
	})
}

// adminBreakers reads the breakers' detail from the admin state feed.
func adminBreakers(t *testing.T, a *instance) map[string]breaker.Snapshot {
	t.Helper()
	recs := a.logs.records("admin listening")
	if len(recs) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	resp, body, err := send("GET", fmt.Sprintf("http://%s/api/state", recs[0]["addr"]), nil, "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET admin state: %v, %v", resp, err)
	}
	var st struct {
		Detail map[string]breaker.Snapshot `json:"breaker_detail"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("decode admin state: %v", err)
	}
	return st.Detail
}
