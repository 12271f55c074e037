// Package loglimit keeps a line that every request would write during an
// outage (Redis away: each read's fallback, each write's failed
// invalidation) to one a second, saying how many were left out. One line
// per request floods the log exactly when it is read, buries the lines that
// explain the outage, and spends CPU the degraded service needs.
package loglimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// PerSecond lets one line a second through. The zero value is ready; share
// one between the lines that count as one flood.
type PerSecond struct {
	last    atomic.Int64 // unix second of the last line written
	dropped atomic.Int64 // lines left out since
}

// Log writes msg at level unless a line went out this second. The next
// line that goes out carries similar_lines_left_out: how many did not.
func (p *PerSecond) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	now := time.Now().Unix()
	last := p.last.Load()
	if now <= last || !p.last.CompareAndSwap(last, now) {
		p.dropped.Add(1)
		return
	}
	if n := p.dropped.Swap(0); n > 0 {
		args = append(args, "similar_lines_left_out", n)
	}
	log.Log(context.Background(), level, msg, args...)
}
