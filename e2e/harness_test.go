package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/app"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// The one harness of the end-to-end tests: an environment of the test's
// own (testEnv), the app run in process through app.Main (launchApp,
// startApp; crash_test.go runs it as a child process), seeded product ids
// (productID). Requests and metrics: requests_test.go.

// redisDB is the Redis logical database of the end-to-end tests.
const redisDB = 4

// listenWait bounds how long an app may take to log "listening".
const listenWait = 30 * time.Second

// testAPIKey is the write key of every test app (API_KEYS in testEnv).
const testAPIKey = "test-key-0123456789abcdef"

// testEnv creates a fresh database for t and returns the environment that
// points run at it and at Redis database redisDB (on REDIS_URL) under a
// CACHE_NAMESPACE of the test's own (its keys are deleted when the test
// ends; nothing else in the database is touched), with the L1 and the rate
// limits off and product writes allowed with testAPIKey. Each of overrides
// is applied in turn; an empty value leaves the variable unset, so run
// takes its default.
func testEnv(t testing.TB, overrides ...map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":    dbtest.NewDatabase(t, "e2e"),
		"REDIS_URL":       dbtest.RedisDBURL(redisDB),
		"CACHE_NAMESPACE": dbtest.Namespace(t, redisDB),
		"L1_TTL":          "0",
		"RATE_LIMIT":      "off",
		// Likewise for the per-key budget of the key below.
		"RATE_LIMIT_KEY": "off",
		// Product writes need a key; send presents this one by default.
		"API_KEYS": testAPIKey,
	}
	for _, o := range overrides {
		maps.Copy(env, o)
	}
	return env
}

// command runs the command in args as the binary does (app.Main) and maps
// a non-zero exit code to an error carrying what it wrote to stderr.
func command(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var stderr bytes.Buffer
	if code := app.Main(ctx, args, getenv, stdout, &stderr); code != 0 {
		return fmt.Errorf("app.Main %v: exit code %d: %s", args, code, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// run serves HTTP with getenv until ctx ends (app.Main with no command);
// nil means a clean shutdown.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	return command(ctx, nil, getenv, stdout)
}

// envOf is a getenv over a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// nsKey is the Redis key name the app started with env uses for key.
func nsKey(env map[string]string, key string) string {
	if ns := env["CACHE_NAMESPACE"]; ns != "" {
		return ns + ":" + key
	}
	return key
}

// seededProducts is how many products the migrations create: ids 1 to
// seededProducts exist in every test database.
const seededProducts = 1000

// absentProductID names no product in a test database.
const absentProductID = 999999

// idsTaken holds each running test's last productID.
var idsTaken sync.Map // testing.TB → *atomic.Int64

// productID returns a seeded product id t has not taken before, so a
// product the test means to read cold has never been read, cached or
// written by an earlier step of it. Every test has a database and a cache
// namespace of its own, so ids never need to differ between tests.
func productID(t testing.TB) int64 {
	t.Helper()
	v, loaded := idsTaken.LoadOrStore(t, new(atomic.Int64))
	if !loaded {
		t.Cleanup(func() { idsTaken.Delete(t) })
	}
	id := v.(*atomic.Int64).Add(1)
	if id > seededProducts {
		t.Fatalf("productID: the test took more than the %d seeded products", seededProducts)
	}
	return id
}

// instance is one run of the service in a goroutine.
type instance struct {
	t      testing.TB
	logs   *logCapture
	cancel context.CancelFunc
	exited chan struct{} // closed when run returns; err is set before
	err    error
	once   sync.Once
	result error
	early  bool // run returned before listening, and the test said so
}

// appOption changes how launchApp runs the service.
type appOption func(*appRun)

type appRun struct {
	gate  <-chan struct{}
	quiet bool
}

// afterGate starts run only once gate is closed, so several instances can
// start at the same moment.
func afterGate(gate <-chan struct{}) appOption {
	return func(r *appRun) { r.gate = gate }
}

// quietLog keeps only the "listening" log line, so a benchmark's logging
// costs what it costs in production rather than a test's capture.
func quietLog() appOption {
	return func(r *appRun) { r.quiet = true }
}

// launchApp starts run with env without waiting for it to listen.
// HTTP_ADDR and ADMIN_ADDR default to 127.0.0.1:0. Cleanup cancels run and
// fails the test unless it returns nil.
func launchApp(t testing.TB, env map[string]string, opts ...appOption) *instance {
	t.Helper()
	var r appRun
	for _, o := range opts {
		o(&r)
	}
	vars := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"}
	maps.Copy(vars, env)
	ctx, cancel := context.WithCancel(context.Background())
	a := &instance{t: t, logs: &logCapture{}, cancel: cancel, exited: make(chan struct{})}
	if r.quiet {
		a.logs.keep = func(line []byte) bool { return bytes.Contains(line, []byte(`"msg":"listening"`)) }
	}
	go func() {
		defer close(a.exited)
		if r.gate != nil {
			<-r.gate
		}
		a.err = run(ctx, envOf(vars), a.logs)
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
func (a *instance) waitListening() string {
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
func (a *instance) stop() error {
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
func startApp(t testing.TB, env map[string]string) (baseURL string, stop func() error) {
	t.Helper()
	a := launchApp(t, env)
	return a.waitListening(), a.stop
}

// dbConn connects to the test's database for set-up and checks.
func dbConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// scalar runs a query of one integer.
func scalar(t testing.TB, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
