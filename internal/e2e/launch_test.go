package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/app"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// The app under test runs in process through app.Main, the binary's own
// entry point, exactly as main.go calls it: nothing of internal/app but
// Main is used (tools/checks/layout_test.go). startChild runs it as a
// child process instead, for a test that must kill it with SIGKILL.

// listenWait bounds how long an app may take to log "listening".
const listenWait = 30 * time.Second

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

// startApp runs the service with env and waits until it listens. stop
// cancels it and returns run's error; cleanup stops it too.
func startApp(t testing.TB, env map[string]string) (baseURL string, stop func() error) {
	t.Helper()
	a := launchApp(t, env)
	return a.waitListening(), a.stop
}

// startAppFilterLoaded is startApp for a test that locks the products
// table: it also waits for the unknown-id filter's first load
// (waitFilterLoaded).
func startAppFilterLoaded(t testing.TB, env map[string]string) (baseURL string, stop func() error) {
	t.Helper()
	a := launchApp(t, env)
	baseURL = a.waitListening()
	a.waitFilterLoaded()
	return baseURL, a.stop
}

// waitFilterLoaded waits for the unknown-id filter's first load. It runs in
// the background from the start and reads the products table: a test that
// locks that table or slows the database link waits for it first, or the
// load, held up behind the test, takes one of the pool's connections (or a
// place in its queue) that the test counts on. On a loaded machine it
// started late enough to be caught by TestOverloadShedsReadsAdmitsCheckout's
// lock once in a dozen runs: 5 reads served instead of 6.
func (a *instance) waitFilterLoaded() {
	a.t.Helper()
	if !dbtest.Eventually(listenWait, func() bool { return len(a.logs.records("unknown-id filter loaded")) > 0 }) {
		a.t.Fatalf("unknown-id filter not loaded within %s\nlog:\n%s", listenWait, a.logs)
	}
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

// startChild runs the service as a separate process (this test binary, see
// TestMain) and returns its base URL once it listens. Cleanup kills it.
func startChild(t *testing.T, env map[string]string) (base string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", "HTTP_ADDR=127.0.0.1:0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v) // the last value of a name wins
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, cmd
	case <-time.After(listenWait):
		t.Fatalf("child did not listen within %s", listenWait)
		return "", nil
	}
}
