package breaker

import (
	"errors"
	"time"

	"github.com/sony/gobreaker/v2"
)

// windowBuckets is how many buckets the rolling window has: an error leaves
// the count at most a tenth of Window after it aged out.
const windowBuckets = 10

// errProbe marks the outcome of the layer's own probe, so that the
// classifiers below count every probe error as a failure: a probe that
// timed out must re-open the breaker even where a caller's deadline is
// excluded (package db's classifier excludes it).
var errProbe = errors.New("health probe failed")

// settings maps Config onto gobreaker's Settings: gobreaker counts, trips,
// classifies and holds the half-open slot; the layer decides when the slot
// is taken (Timeout 1 ns: the schedule, not gobreaker, times the opening).
func (b *Breaker) settings() gobreaker.Settings {
	c := b.cfg
	return gobreaker.Settings{
		Name:         c.Name,
		MaxRequests:  1, // the one probe; one success closes the breaker
		Interval:     c.Window,
		BucketPeriod: c.Window / windowBuckets,
		Timeout:      time.Nanosecond,
		ReadyToTrip:  func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= c.Failures },
		IsSuccessful: func(err error) bool {
			return err == nil || !errors.Is(err, errProbe) && !c.IsFailure(err)
		},
		IsExcluded: func(err error) bool {
			return err != nil && !errors.Is(err, errProbe) && c.IsExcluded(err)
		},
		OnStateChange: b.onStateChange,
	}
}

// onStateChange follows gobreaker's transitions and drives the schedule.
// gobreaker calls it from inside Allow or a done callback, which the layer
// only calls under b.mu: it runs under b.mu.
func (b *Breaker) onStateChange(_ string, from, to gobreaker.State) {
	switch to {
	case gobreaker.StateOpen:
		if from == gobreaker.StateClosed { // the schedule starts over
			b.failedProbes, b.wait = 0, b.cfg.OpenMin
		} else { // the probe failed
			b.failedProbes++
			b.wait = min(2*b.wait, b.cfg.OpenMax)
		}
		b.scheduleLocked()
	case gobreaker.StateHalfOpen: // only the layer's probe gets here
		b.nextProbe = time.Time{}
		b.probes++
	case gobreaker.StateClosed: // the probe succeeded
		b.failedProbes = 0
	}
	prev := b.state
	b.state = stateOf(to)
	if b.cfg.OnStateChange != nil {
		b.cfg.OnStateChange(b.cfg.Name, prev, b.state)
	}
}

// stateOf names gobreaker's state in this package's terms (the metric's
// numbers).
func stateOf(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return HalfOpen
	case gobreaker.StateOpen:
		return Open
	}
	return Closed
}
