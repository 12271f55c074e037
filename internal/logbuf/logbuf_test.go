package logbuf_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/logbuf"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink records each write(2) the Writer makes.
type sink struct {
	mu     sync.Mutex
	writes []string
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *sink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

func TestBatching(t *testing.T) {
	tests := []struct {
		name  string
		every time.Duration
		do    func(w *logbuf.Writer)
		want  []string // the writes out saw, in order
	}{
		{"off: one write per line", 0, func(w *logbuf.Writer) {
			w.Write([]byte("a\n"))
			w.Write([]byte("b\n"))
		}, []string{"a\n", "b\n"}},
		{"on: lines wait for a flush, then go in one write", time.Hour, func(w *logbuf.Writer) {
			w.Write([]byte("a\n"))
			w.Write([]byte("b\n"))
			w.Flush()
		}, []string{"a\n" + "b\n"}},
		{"a direct line follows the batched ones", time.Hour, func(w *logbuf.Writer) {
			w.Write([]byte("access 1\n"))
			w.Direct().Write([]byte("warning\n"))
			w.Write([]byte("access 2\n"))
		}, []string{"access 1\n", "warning\n"}},
		{"a full batch is written without waiting", time.Hour, func(w *logbuf.Writer) {
			line := strings.Repeat("x", 1023) + "\n"
			for range 40 { // 40 KiB > the 32 KiB batch
				w.Write([]byte(line))
			}
		}, []string{strings.Repeat(strings.Repeat("x", 1023)+"\n", 32)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out sink
			w := logbuf.New(&out, tt.every)
			tt.do(w)
			if got := out.all(); !slices.Equal(got, tt.want) {
				t.Errorf("writes %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRunFlushes: lines reach out while Run runs, with no flush asked for.
func TestRunFlushes(t *testing.T) {
	var out sink
	w := logbuf.New(&out, time.Millisecond)
	defer w.Start()()
	w.Write([]byte("line\n"))
	dbtest.WaitFor(t, "a batched line written while Run runs", func() bool { return len(out.all()) > 0 })
}

// TestRunFlushesAtTheEnd: when Run's context ends it writes what is
// batched before it returns, however long the interval (a clean shutdown
// loses no access line).
func TestRunFlushesAtTheEnd(t *testing.T) {
	var out sink
	w := logbuf.New(&out, time.Hour)
	stop := w.Start()
	w.Write([]byte("last\n"))
	stop()
	if got := strings.Join(out.all(), ""); got != "last\n" {
		t.Errorf("after Run returned out holds %q, want the batched line", got)
	}
	// A line after the last flush (a handler outliving the shutdown) is
	// written at once, not batched for a flush that never comes.
	w.Write([]byte("late\n"))
	if got := strings.Join(out.all(), ""); got != "last\nlate\n" {
		t.Errorf("a line written after Run returned: out holds %q, want it written at once", got)
	}
}
