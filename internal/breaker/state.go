package breaker

import (
	"fmt"
	"time"
)

// State is where a breaker is. The numbers are the stampede_breaker_state
// metric's values.
type State int

// The three states.
const (
	Closed   State = 0 // calls pass and are counted
	HalfOpen State = 1 // the probe runs; calls are refused as when open
	Open     State = 2 // calls are refused until the next probe
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half-open"
	case Open:
		return "open"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// MarshalText writes the state's name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name, for clients of the JSON feeds.
func (s *State) UnmarshalText(b []byte) error {
	for _, c := range []State{Closed, HalfOpen, Open} {
		if string(b) == c.String() {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("breaker: unknown state %q", b)
}

// Snapshot is a breaker's state at one moment, for readiness, metrics and
// the admin console.
type Snapshot struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// NextProbe is when the next probe starts; zero when closed or while a
	// probe runs.
	NextProbe time.Time `json:"next_probe,omitzero"`
	// NextProbeSeconds is the time until NextProbe (0 when none is due).
	NextProbeSeconds float64 `json:"next_probe_seconds"`
	// FailedProbes counts consecutive failed probes since the breaker opened.
	FailedProbes int `json:"failed_probes"`
	// Failures counts consecutive outage errors while closed, in
	// gobreaker's window.
	Failures uint32 `json:"failures"`
	// Probes counts every probe started since the breaker was built.
	Probes int64 `json:"probes"`
}

// Snapshot reads the breaker's state. It does not read gobreaker's state,
// which would move it from open to half-open.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Snapshot{
		Name: b.cfg.Name, State: b.state, NextProbe: b.nextProbe,
		NextProbeSeconds: b.untilProbeLocked().Seconds(),
		FailedProbes:     b.failedProbes, Failures: b.cb.Counts().ConsecutiveFailures, Probes: b.probes,
	}
}

// State is the breaker's current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
