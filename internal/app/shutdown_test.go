package app

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/config"
)

// TestSecondSignalCutsTheDrainDelay: a second SIGTERM (or Ctrl-C) while
// the instance drains ends SHUTDOWN_DRAIN_DELAY at once, so an hour's
// delay (mistyped, or at a terminal) does not hold the process; without
// one the delay is kept.
func TestSecondSignalCutsTheDrainDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signal  bool
		delay   time.Duration
		atMost  time.Duration // how long shutdown may take
		atLeast time.Duration
	}{
		{"second signal", true, time.Hour, 5 * time.Second, 0},
		{"no second signal", false, 300 * time.Millisecond, 5 * time.Second, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
			serveErr := make(chan error, 1)
			go func() { serveErr <- srv.Serve(ln) }()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			again := make(chan os.Signal, 1)
			if tc.signal {
				again <- syscall.SIGTERM
			}
			cfg := config.Config{DrainDelay: tc.delay, ShutdownTimeout: time.Second}
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				done <- shutdown(srv, handlers.NewHealth(time.Second, log), serveErr, again, func() {}, cfg, log)
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took < tc.atLeast {
					t.Errorf("shutdown took %s, want the drain delay %s kept", took, tc.atLeast)
				}
			case <-time.After(tc.atMost):
				_ = srv.Close()
				<-done
				t.Fatalf("shutdown with a %s drain delay still waiting after %s", tc.delay, tc.atMost)
			}
		})
	}
}

// TestFailedStartLogsJSON: a server that cannot start says why on stderr,
// for a person, and as the last JSON line of its log on stdout, for
// whatever parses the log; a command's error stays plain text.
func TestFailedStartLogsJSON(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "not an address", "REQUEST_TIMEOUT": "soon"}
	for _, tc := range []struct {
		name string
		args []string
		json bool
	}{
		{"server", nil, true},
		{"command", []string{"migrate", "up"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(t.Context(), tc.args, func(k string) string { return env[k] }, &stdout, &stderr); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), "REQUEST_TIMEOUT") {
				t.Errorf("stderr %q does not name the bad variable", stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var last struct{ Level, Msg, Err string }
			err := json.Unmarshal([]byte(lines[len(lines)-1]), &last)
			got := err == nil && last.Level == "ERROR" && strings.Contains(last.Err, "REQUEST_TIMEOUT")
			if got != tc.json {
				t.Errorf("stdout's last line %q: a JSON error line %v, want %v", lines[len(lines)-1], got, tc.json)
			}
		})
	}
}
