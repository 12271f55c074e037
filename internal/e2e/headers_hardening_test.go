package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHeadersOnEveryAnswer: every answer — API, errors, the router's own
// 404 and 405, probes, metrics, the document, the admin side — carries
// X-Content-Type-Options: nosniff; nothing redirects; the console runs
// under a strict Content-Security-Policy and is never framed.
func TestHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	a := launchApp(t, testEnv(t))
	base := a.waitListening()
	admin := "http://" + a.logs.records("admin listening")[0]["addr"].(string)
	// Not testClient: the document check reads /openapi.yaml as YAML, not the
	// string its schema names; headers are what this test looks at.
	noFollow := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, url string
		want        int
	}{
		{"GET", base + "/products/1", 200},
		{"HEAD", base + "/products/1", 200},
		{"GET", base + "/products/0", 400},
		{"GET", base + "/products/999999", 404},
		{"GET", base + "/nope", 404},
		{"GET", base + "/products/", 404},
		{"POST", base + "/orders/", 404},
		{"DELETE", base + "/products/1", 405},
		{"POST", base + "/products", 401},
		{"GET", base + "/healthz", 200},
		{"GET", base + "/readyz", 200},
		{"GET", base + "/metrics", 200},
		{"GET", base + "/openapi.yaml", 200},
		{"GET", admin + "/", 200},
		{"GET", admin + "/console.js", 200},
		{"GET", admin + "/api/state", 200},
		{"GET", admin + "/debug/pprof/cmdline", 200},
	} {
		t.Run(tc.method+" "+strings.TrimPrefix(strings.TrimPrefix(tc.url, base), admin), func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, nil)
			req.Host = "127.0.0.1" // the admin side serves a loopback Host
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d (Location %q), want %d", resp.StatusCode, resp.Header.Get("Location"), tc.want)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if ct := resp.Header.Get("Content-Type"); tc.want >= 400 && !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%d answered as %q, want JSON", tc.want, ct)
			}
		})
	}
	t.Run("console policy", func(t *testing.T) {
		resp, _ := call(t, "GET", admin+"/", nil, "")
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("Content-Security-Policy %q lacks %s", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("Content-Security-Policy %q allows unsafe code", csp)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("X-Frame-Options %q, want DENY", got)
		}
	})
	// Go's HTTP server answers headers over MaxHeaderBytes itself, before
	// the app sees the request: plain text, as openapi.yaml says.
	t.Run("431 from net/http", func(t *testing.T) {
		if got := rawStatus(t, base, "GET /products/1 HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 70<<10)+"\r\n\r\n"); got != 431 {
			t.Errorf("70 KiB of headers: %d, want 431", got)
		}
	})
}

// rawStatus writes req on a new connection to base and returns the
// answer's status.
func rawStatus(t *testing.T, base, req string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHeaderRequestIDOwnOnPublicAnswers: a cacheable (public) product
// answer — 200, 304, 404 — carries an id of the server's, never the one
// the client chose, which a CDN would hand to everyone; a private answer
// still echoes it. The access line names the id the answer carried.
func TestHeaderRequestIDOwnOnPublicAnswers(t *testing.T) {
	t.Parallel()
	a := launchApp(t, testEnv(t))
	base := a.waitListening()
	resp, _ := call(t, "GET", base+"/products/5", nil, "")
	etag := resp.Header.Get("ETag")
	for i, tc := range []struct {
		path    string
		headers map[string]string
		want    int
		echoed  bool
	}{
		{"/products/5", nil, 200, false},
		{"/products/5", map[string]string{"If-None-Match": etag}, 304, false},
		{"/products/999999", nil, 404, false},
		{"/products?limit=1", nil, 200, true}, // no-store: the client's id comes back
		{"/products/0", nil, 400, true},
	} {
		id := fmt.Sprintf("client-chosen-%d", i)
		h := map[string]string{"X-Request-ID": id}
		for k, v := range tc.headers {
			h[k] = v
		}
		resp, _ := call(t, "GET", base+tc.path, h, "")
		got := resp.Header.Get("X-Request-ID")
		switch {
		case resp.StatusCode != tc.want:
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		case tc.echoed && got != id:
			t.Errorf("%s (%s): X-Request-ID %q, want the client's %q", tc.path, resp.Header.Get("Cache-Control"), got, id)
		case !tc.echoed && (got == id || got == ""):
			t.Errorf("%s (%s): X-Request-ID %q, want one of the server's, not %q", tc.path, resp.Header.Get("Cache-Control"), got, id)
		case !tc.echoed:
			eventually(t, 5*time.Second, "an access line with the answer's id "+got, func() (bool, string) { return accessLineWithID(a, got), "" })
		}
	}
}

func accessLineWithID(a *instance, id string) bool {
	for _, r := range a.logs.records("request") {
		if r["request_id"] == id {
			return true
		}
	}
	return false
}

// TestLogBoundsMethod: a 20 000-character method is written to the access
// log cut to 64 characters and marked, not in full.
func TestLogBoundsMethod(t *testing.T) {
	t.Parallel()
	a := launchApp(t, testEnv(t))
	base := a.waitListening()
	method := "X" + strings.Repeat("A", 20_000)
	if got := rawStatus(t, base, method+" /products/1 HTTP/1.1\r\nHost: x\r\n\r\n"); got >= 500 {
		t.Fatalf("a long method answered %d", got)
	}
	var line map[string]any
	eventually(t, 5*time.Second, "the access line of the long method", func() (bool, string) {
		for _, r := range a.logs.records("request") {
			if m, _ := r["method"].(string); strings.HasPrefix(m, "XAAA") {
				line = r
				return true, ""
			}
		}
		return false, ""
	})
	if m := line["method"].(string); len(m) > 64+len("...(truncated)") || !strings.HasSuffix(m, "...(truncated)") {
		t.Errorf("method logged as %d characters (%.80q), want at most 64 and a marker", len(m), m)
	}
}
