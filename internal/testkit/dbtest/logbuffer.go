package dbtest

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer is a log sink safe for concurrent writers, for a test that
// counts the lines a component wrote (a rate-limited warning, say).
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Count is how many times s occurs in what was written.
func (b *LogBuffer) Count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}
