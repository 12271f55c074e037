package middleware

import (
	"log/slog"
	"sync"
	"time"
)

// SampledLog writes at most perSecond lines a second and counts the rest:
// the first line of a later second carries how many were suppressed. A
// refusal an attacker can provoke at will (a made-up API key) must not be
// able to write the log without bound.
type SampledLog struct {
	log       *slog.Logger
	perSecond int
	now       func() time.Time

	mu         sync.Mutex
	second     int64 // the Unix second being counted
	written    int   // lines written in it
	suppressed int   // lines not written since the last one that was
}

// NewSampledLog samples log at perSecond lines a second (at least 1).
func NewSampledLog(log *slog.Logger, perSecond int) *SampledLog {
	return &SampledLog{log: log, perSecond: max(perSecond, 1), now: time.Now}
}

// Warn logs msg unless this second's lines are spent.
func (s *SampledLog) Warn(msg string, args ...any) {
	if s == nil || s.log == nil {
		return
	}
	now := s.now().Unix()
	s.mu.Lock()
	if now != s.second {
		s.second, s.written = now, 0
	}
	if s.written >= s.perSecond {
		s.suppressed++
		s.mu.Unlock()
		return
	}
	s.written++
	suppressed := s.suppressed
	s.suppressed = 0
	s.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "suppressed_since_last", suppressed)
	}
	s.log.Warn(msg, args...)
}
