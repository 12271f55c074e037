package e2e

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestStartAnswersWhileDependenciesOpen: the listener is bound before the
// dependencies open, so a start held up in them (here the products table
// locked, as another instance's migration would lock it) left every
// accepted connection unanswered until it ended, /healthz included. Now
// the instance answers from the moment it is bound: liveness 200,
// readiness 503 "starting", the API 503 with Retry-After, each at once.
func TestStartAnswersWhileDependenciesOpen(t *testing.T) {
	env := testEnv(t)
	// A first start migrates the database, so there is a table to lock.
	if _, stop := startApp(t, env); stop() != nil {
		t.Fatal("first start did not stop cleanly")
	}
	_, release := lockTable(t, env["DATABASE_URL"], "products")

	env = maps.Clone(env)
	env["HTTP_ADDR"] = freeAddr(t)
	a := launchApp(t, env)
	base := "http://" + env["HTTP_ADDR"]
	client := &http.Client{Timeout: 2 * time.Second}

	// Wait for the bind (connection refused until then), not for an answer.
	var health *http.Response
	for deadline := time.Now().Add(listenWait); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if health, err = client.Get(base + "/healthz"); err == nil {
			health.Body.Close()
			break
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("GET /healthz while starting: no answer within %v (the start holds accepted connections)", client.Timeout)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: %v after %v", err, listenWait)
		}
	}
	if len(a.logs.records("listening")) > 0 {
		t.Fatal(`the start finished before the table lock held it: this test did not see the start`)
	}
	if health.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz while starting: %d, want 200 (alive)", health.StatusCode)
	}
	// Only the probes' own routes and methods are probes: the API is
	// not there yet, so anything else is "retry shortly".
	cases := []struct {
		method, path string
		status       int
		retryAfter   bool
		body         string // a field of the JSON body: "status" or "error"
	}{
		{http.MethodGet, "/readyz", http.StatusServiceUnavailable, false, "status"},
		{http.MethodGet, "/products/1", http.StatusServiceUnavailable, true, "error"},
		{http.MethodGet, "/orders/1", http.StatusServiceUnavailable, true, "error"},
		{http.MethodPost, "/healthz", http.StatusServiceUnavailable, true, "error"},
		{http.MethodGet, "/healthz/", http.StatusServiceUnavailable, true, "error"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s while starting: %v", tc.method, tc.path, err)
			continue
		}
		var body map[string]string
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || err != nil || body[tc.body] == "" {
			t.Errorf("%s %s while starting: %d %v (decode: %v), want %d with %q", tc.method, tc.path, resp.StatusCode, body, err, tc.status, tc.body)
		}
		if got := resp.Header.Get("Retry-After") != ""; got != tc.retryAfter {
			t.Errorf("%s %s while starting: Retry-After %q, want one: %v", tc.method, tc.path, resp.Header.Get("Retry-After"), tc.retryAfter)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s while starting: no X-Request-ID (every answer carries one)", tc.method, tc.path)
		}
	}

	// The lock gone, the start ends and the API takes over.
	release()
	a.waitListening()
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz after the start: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /readyz after the start: %d, want 200", resp.StatusCode)
	}
}

// freeAddr is a loopback address with a port free a moment ago, for a test
// that must know the address before the app logs it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestStopWhileStartingIsClean: a signal while the start is held up (here
// by a locked products table, as by a slow database) ends the process
// cleanly: exit 0 and no ERROR line. It exited 1 with "stopped with an
// error … context canceled", so a deploy that cancels a starting instance
// read as a database failure.
func TestStopWhileStartingIsClean(t *testing.T) {
	env := testEnv(t)
	if _, stop := startApp(t, env); stop() != nil { // migrated: a table to lock
		t.Fatal("first start did not stop cleanly")
	}
	_, release := lockTable(t, env["DATABASE_URL"], "products")
	defer release()
	env = maps.Clone(env)
	env["HTTP_ADDR"] = freeAddr(t)
	a := launchApp(t, env)
	client := &http.Client{Timeout: 2 * time.Second}
	if !dbtest.Eventually(listenWait, func() bool {
		resp, err := client.Get("http://" + env["HTTP_ADDR"] + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatal("the starting instance never answered")
	}
	if err := a.stop(); err != nil {
		t.Errorf("stopped while starting: %v, want a clean exit", err)
	}
	if errs := a.logs.records("stopped with an error"); len(errs) > 0 {
		t.Errorf("stopped while starting: logged %v, want no error", errs)
	}
}

// TestStartWaitsForTheDatabase: an instance started while its database
// does not answer waits for it, alive and not ready, and serves once it
// answers. It exited 1 after about 3 s, so during a shared outage every
// instance (re)started crash-looped, and its restart back-off outlasted the
// outage.
func TestStartWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	link := proxyDatabase(t, env)
	link.SetDown(true)
	env["HTTP_ADDR"] = freeAddr(t)
	a := launchApp(t, env)
	base := "http://" + env["HTTP_ADDR"]

	// Past the start's first five attempts (1.5 s of back-off), and two warnings.
	if !dbtest.Eventually(20*time.Second, func() bool {
		return len(a.logs.records("database not reachable yet: waiting for it; /readyz answers 503 until then")) >= 2
	}) {
		t.Fatalf("no repeated warning that the start waits for the database; log:\n%s", a.logs)
	}
	select {
	case <-a.exited:
		t.Fatalf("run returned %v with the database down, want it to wait", a.err)
	default:
	}
	// The log says the port is open before it waits: silent until
	// "listening", it read as a port not yet bound.
	if recs := a.logs.records("port bound: starting, every route but /healthz answers 503 until ready"); len(recs) != 1 || recs[0]["addr"] != env["HTTP_ADDR"] {
		t.Errorf("port-bound lines while waiting for the database: %v, want one naming %s", recs, env["HTTP_ADDR"])
	}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable} {
		if resp, _, err := send(http.MethodGet, base+path, nil, ""); err != nil || resp.StatusCode != want {
			t.Errorf("GET %s while waiting for the database: %v %v, want %d", path, resp, err, want)
		}
	}

	link.SetDown(false)
	a.waitListening()
	if resp, body, err := send(http.MethodGet, base+"/products/1", nil, ""); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /products/1 once the database answers: %v %s %v, want 200", resp, body, err)
	}
}
