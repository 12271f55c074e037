package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// logCapture is run's stdout: it keeps complete JSON lines, safely for
// concurrent writers and readers.
type logCapture struct {
	keep    func(line []byte) bool // nil keeps every line
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
		if w.keep == nil || w.keep(w.partial[:i]) {
			w.lines = append(w.lines, string(w.partial[:i]))
		}
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
