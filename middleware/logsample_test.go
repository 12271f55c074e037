package middleware

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSampledLogBounded: at most perSecond lines a second, and the next
// line written says how many were suppressed.
func TestSampledLogBounded(t *testing.T) {
	var buf bytes.Buffer
	s := NewSampledLog(slog.New(slog.NewTextHandler(&buf, nil)), 5)
	now := time.Unix(1_000, 0)
	s.now = func() time.Time { return now }
	for range 300 {
		s.Warn("refused")
	}
	if got := strings.Count(buf.String(), "\n"); got != 5 {
		t.Errorf("300 warnings in one second: %d lines, want 5", got)
	}
	now = now.Add(time.Second)
	buf.Reset()
	s.Warn("refused")
	if !strings.Contains(buf.String(), "suppressed_since_last=295") {
		t.Errorf("first line of the next second: %q, want suppressed_since_last=295", buf.String())
	}
}
