package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReadyzSpeaksForThisInstanceOnly: with Redis unreachable and the
// database's breaker open, /readyz still answers 200 (an outage shared by
// the fleet must not eject every instance at once), its body names each
// dependency's state in plain words, and it never carries a driver error:
// no host, port, user or database name.
func TestReadyzSpeaksForThisInstanceOnly(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{
		"BREAKER_FAILURES": "2",
		"BREAKER_OPEN_MIN": "1m", "BREAKER_OPEN_MAX": "1m", // stays open for the whole test
		"DB_ACQUIRE_TIMEOUT": "500ms",
	})
	dbURL, err := url.Parse(env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(dbURL.Path, "/")
	redisLink, pgLink := proxyRedis(t, env), proxyDatabase(t, env)
	a := launchApp(t, env)
	base := a.waitListening()

	ready := func() (int, map[string]any, string) {
		resp, body := call(t, "GET", base+"/readyz", nil, "")
		return resp.StatusCode, decodeObject(t, body), string(body)
	}
	if status, body, raw := ready(); status != http.StatusOK || body["degraded"] != false {
		t.Fatalf("/readyz before the outage: got %d %s, want 200 and not degraded", status, raw)
	}

	redisLink.SetDown(true)
	pgLink.SetDown(true)
	for range 39 {
		if breakerWent(a.logs, "postgres_main", "open") {
			break
		}
		timedGet(fmt.Sprintf("%s/products/%d", base, productID(t)))
	}
	if !breakerWent(a.logs, "postgres_main", "open") {
		t.Fatal("the database breaker did not open")
	}

	// A round of checks answers /readyz for a second: the one before the
	// outage may still be the answer.
	status, body, raw := ready()
	for deadline := time.Now().Add(3 * time.Second); body["degraded"] != true && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		status, body, raw = ready()
	}
	if status != http.StatusOK || body["status"] != "ready" || body["degraded"] != true {
		t.Fatalf("/readyz during the outage: got %d %s, want 200, status ready, degraded true", status, raw)
	}
	checks, _ := body["checks"].(map[string]any)
	want := map[string][]string{
		"redis":            {"unreachable", "timeout", "breaker open"},
		"postgres":         {"unreachable", "timeout", "breaker open"},
		"postgres_breaker": {"breaker open"},
	}
	for name, allowed := range want {
		got, _ := checks[name].(string)
		if !contains(allowed, got) {
			t.Errorf("checks.%s: got %q, want one of %q (body %s)", name, got, allowed, raw)
		}
	}
	// Where each breaker is in its probe schedule.
	breakers, _ := body["breakers"].(map[string]any)
	mainBreaker, _ := breakers["postgres_main"].(map[string]any)
	if mainBreaker["state"] != "open" && mainBreaker["state"] != "half-open" || mainBreaker["next_probe_seconds"] == nil || mainBreaker["failed_probes"] == nil {
		t.Errorf("breakers.postgres_main: got %v, want state open, next_probe_seconds and failed_probes (body %s)", mainBreaker, raw)
	}
	for _, secret := range []string{redisLink.Addr(), pgLink.Addr(), dbName, "127.0.0.1", "dial", "user=", "database"} {
		if strings.Contains(raw, secret) {
			t.Errorf("/readyz body leaks %q: %s", secret, raw)
		}
	}
	// While the breaker is open, no probe calls the database: 20 clients
	// probing for 1.5 s (several rounds of checks) dial it not once. Each
	// probe dialled it (and was refused) when /readyz pinged regardless.
	dials := pgLink.Stats().Refused
	var probes sync.WaitGroup
	until := time.Now().Add(1500 * time.Millisecond)
	for range 20 {
		probes.Go(func() {
			for time.Now().Before(until) {
				if resp, _, err := send(http.MethodGet, base+"/readyz", nil, ""); err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("/readyz in the flood: %v %v, want 200", resp, err)
					return
				}
			}
		})
	}
	probes.Wait()
	if n := pgLink.Stats().Refused - dials; n != 0 {
		t.Errorf("/readyz probes with the breaker open dialled the database %d times, want 0", n)
	}
	if resp, b := call(t, "GET", base+"/healthz", nil, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz during the outage: got %d %s, want 200 (liveness ignores dependencies)", resp.StatusCode, b)
	}
	// The detail is in the log, for the operator.
	deadline := time.Now().Add(5 * time.Second)
	for len(a.logs.records("readiness: dependency check failed")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(a.logs.records("readiness: dependency check failed")) == 0 {
		t.Error("no log line with the failed check's detail")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// probeTimeout is the shortest readiness probe timeout the deploy files
// set (deploy/k8s/deployment.yaml: timeoutSeconds 1).
const probeTimeout = time.Second

// TestReadyzAnswersWithinTheProbeTimeout: with Redis and PostgreSQL
// stalled (connections open, nothing answered), /readyz still answers 200
// well within the probe's timeout, naming both as timed out. At the probe's
// timeout it counted as failed: two in a row took the instance, and with a
// shared stall the whole fleet, out of rotation, the ejection readiness
// exists to avoid.
func TestReadyzAnswersWithinTheProbeTimeout(t *testing.T) {
	t.Parallel()
	env := testEnv(t, nil)
	redisLink, pgLink := proxyRedis(t, env), proxyDatabase(t, env)
	a := launchApp(t, env)
	base := a.waitListening()
	defer func() { redisLink.SetDelay(0); pgLink.SetDelay(0) }() // before the app's shutdown

	redisLink.SetDelay(5 * time.Second)
	pgLink.SetDelay(5 * time.Second)
	for i := range 3 {
		start := time.Now()
		resp, body, err := send(http.MethodGet, base+"/readyz", nil, "")
		took := time.Since(start)
		if err != nil {
			t.Fatalf("/readyz %d with both stalled: %v", i, err)
		}
		t.Logf("/readyz %d with both stalled: %d in %s: %s", i, resp.StatusCode, took.Round(time.Millisecond), body)
		if resp.StatusCode != http.StatusOK || took >= probeTimeout-100*time.Millisecond {
			t.Errorf("/readyz %d with both stalled: %d in %s, want 200 well within the probe timeout (%s)", i, resp.StatusCode, took.Round(time.Millisecond), probeTimeout)
		}
		checks, _ := decodeObject(t, body)["checks"].(map[string]any)
		for _, name := range []string{"redis", "postgres"} {
			if checks[name] != "timeout" {
				t.Errorf("/readyz %d: checks.%s = %v, want timeout (body %s)", i, name, checks[name], body)
			}
		}
	}
}
