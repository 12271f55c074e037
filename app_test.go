package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db/dbtest"
)

// redisDB is the Redis logical database of package main's tests.
const redisDB = 4

// listenWait bounds how long startApp waits for the "listening" log line.
const listenWait = 30 * time.Second

// testEnv creates a fresh database for t and returns the environment that
// points run at it and at Redis database 4 under a CACHE_NAMESPACE of the
// test's own (its keys are deleted when the test ends; nothing else in the
// database is touched), with the L1 off.
func testEnv(t *testing.T) map[string]string {
	t.Helper()
	url := dbtest.NewDatabase(t, "main")
	return map[string]string{
		"DATABASE_URL":    url,
		"REDIS_URL":       dbtest.RedisDBURL(redisDB),
		"CACHE_NAMESPACE": dbtest.Namespace(t, redisDB),
		"L1_TTL":          "0",
		"RATE_LIMIT":      "off",
		// Likewise for the per-key budget of the key below.
		"RATE_LIMIT_KEY": "off",
		// Product writes need a key; send presents this one by default.
		"API_KEYS": testAPIKey,
	}
}

// testAPIKey is the write key of every test app (API_KEYS in testEnv).
const testAPIKey = "test-key-0123456789abcdef"

// nsKey is the Redis key name the app started with env uses for key.
func nsKey(env map[string]string, key string) string {
	if ns := env["CACHE_NAMESPACE"]; ns != "" {
		return ns + ":" + key
	}
	return key
}

// logCapture is run's stdout: it keeps complete JSON lines, safely for
// concurrent writers and readers.
type logCapture struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (w *logCapture) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines = append(w.lines, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

// records returns the decoded log lines whose "msg" is msg.
func (w *logCapture) records(msg string) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, l := range w.lines {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func (w *logCapture) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n") + string(w.partial)
}

// app is one run of the service in a goroutine.
type app struct {
	t      *testing.T
	logs   *logCapture
	cancel context.CancelFunc
	exited chan struct{} // closed when run returns; err is set before
	err    error
	once   sync.Once
	result error
	early  bool // run returned before listening, and the test said so
}

// launchApp starts run without waiting for it to listen. When gate is not
// nil, run starts only once gate is closed, so several instances can start
// at the same moment. HTTP_ADDR defaults to 127.0.0.1:0.
func launchApp(t *testing.T, env map[string]string, gate <-chan struct{}) *app {
	t.Helper()
	vars := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"}
	for k, v := range env {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{t: t, logs: &logCapture{}, cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(a.exited)
		if gate != nil {
			<-gate
		}
		a.err = run(ctx, func(k string) string { return vars[k] }, a.logs)
	}()
	t.Cleanup(func() {
		if err := a.stop(); err != nil && !a.early {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
		if t.Failed() {
			t.Logf("service log:\n%s", a.logs)
		}
	})
	return a
}

// waitListening waits for the "listening" line and returns the base URL.
func (a *app) waitListening() string {
	a.t.Helper()
	deadline := time.After(listenWait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if recs := a.logs.records("listening"); len(recs) > 0 {
			addr, _ := recs[0]["addr"].(string)
			if addr == "" {
				a.t.Fatalf("listening line has no addr: %v", recs[0])
			}
			return "http://" + addr
		}
		select {
		case <-a.exited:
			a.early = true
			a.t.Fatalf("run returned before listening: %v\nlog:\n%s", a.err, a.logs)
		case <-deadline:
			a.t.Fatalf("no \"listening\" log line within %s\nlog:\n%s", listenWait, a.logs)
		case <-tick.C:
		}
	}
}

// stop cancels run and returns its error; later calls return the same.
func (a *app) stop() error {
	a.once.Do(func() {
		a.cancel()
		select {
		case <-a.exited:
			a.result = a.err
		case <-time.After(60 * time.Second):
			a.result = errors.New("run did not return within 60s of cancel")
		}
	})
	return a.result
}

// startApp runs the service with env and waits until it listens. stop
// cancels it and returns run's error; cleanup stops it too.
func startApp(t *testing.T, env map[string]string) (baseURL string, stop func() error) {
	t.Helper()
	a := launchApp(t, env, nil)
	return a.waitListening(), a.stop
}

// openAPI validates every response testClient receives against
// api/openapi.yaml (openapi_check_test.go).
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
func call(t *testing.T, method, url string, headers map[string]string, body string) (*http.Response, []byte) {
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
