package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/metricstext"
)

// Requests to a test app (harness_test.go) and what they read back.

// openAPI validates every response testClient receives against
// handlers/openapi.yaml (openapi_check_test.go).
var openAPI = newOpenAPICheck(http.DefaultTransport)

var testClient = &http.Client{Timeout: 30 * time.Second, Transport: openAPI}

// send sends one request and returns the response (body already read) and
// its body. POST and PUT are sent as application/json unless headers name
// another Content-Type. Safe in any goroutine.
func send(method, url string, headers map[string]string, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
		// Product writes need a key (API_KEYS); a test that means to send
		// none, or another, names its own Authorization header.
		if _, own := headers["Authorization"]; !own && strings.HasPrefix(req.URL.Path, "/products") {
			req.Header.Set("Authorization", "Bearer "+testAPIKey)
		}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	return resp, b, nil
}

// call is send that fails the test on a transport error (test goroutine only).
func call(t testing.TB, method, url string, headers map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := send(method, url, headers, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

// decodeObject decodes a JSON object body, failing the test otherwise.
func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", b, err)
	}
	return m
}

// scrapeMetrics reads the app's GET /metrics.
func scrapeMetrics(t testing.TB, base string) metricstext.Exposition {
	t.Helper()
	resp, body := call(t, http.MethodGet, base+"/metrics", nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	exp, err := metricstext.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return exp
}

// scrape returns the app's metric samples by "name{labels}".
func scrape(t testing.TB, base string) map[string]float64 {
	t.Helper()
	return scrapeMetrics(t, base).Values("")
}

// testClientIP returns an address from the benchmarking range 198.18/15,
// random per test, for X-Forwarded-For: the test's own rate-limit bucket.
func testClientIP() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("198.19.%d.%d", b[0], 1+b[1]%254)
}
