package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Config is the one way every breaker is configured. Zero values take the
// documented defaults; only Probe is required.
type Config struct {
	// Name labels errors, logs and metrics ("postgres_main", "redis").
	Name string
	// Failures is how many consecutive outage errors open the breaker
	// (gobreaker's ReadyToTrip); default 5.
	Failures uint32
	// Window is gobreaker's rolling window (Interval, in ten buckets of
	// BucketPeriod): an outage error older than that no longer counts
	// towards a streak; default 1 minute, well beyond the time an outage
	// takes to produce its streak.
	Window time.Duration
	// OpenMin is the wait before the first probe after opening (jittered
	// down by up to Jitter); default 375 ms. Probes then come at about 1,
	// 3, 7, 15… × OpenMin after opening: with 375 ms a 2 s blip ends
	// within the third wait, so the third probe (2.1–2.6 s after opening)
	// finds the database back, and a minute-long outage costs 7 probes.
	OpenMin time.Duration
	// OpenMax caps the wait, which doubles after each failed probe; default
	// 30 seconds. OpenMin above OpenMax is lowered to it.
	OpenMax time.Duration
	// Jitter is the largest fraction by which a wait is shortened at random,
	// so instances that opened together probe at different moments; default
	// 0.2. Outside (0, 1) takes the default.
	Jitter float64
	// Probe is the cheap health query (SELECT 1, PING) the breaker runs by
	// itself while open. It must bypass the breaker.
	Probe func(context.Context) error
	// ProbeTimeout bounds one probe; default 1 second.
	ProbeTimeout time.Duration
	// IsFailure reports whether a call's error means the dependency is
	// failing (the rest count as successes: gobreaker's IsSuccessful);
	// default: every error.
	IsFailure func(error) bool
	// IsExcluded reports errors that say nothing about the dependency (the
	// caller cancelled, a client mistake): counted neither as failure nor
	// as success, so they do not reset a failure streak (gobreaker's
	// IsExcluded); default: context.Canceled. The breaker's own probe is
	// never excluded.
	IsExcluded func(error) bool
	// OnStateChange, if set, is told of every transition (from gobreaker's
	// OnStateChange), under the breaker's lock: it must not call back into
	// the breaker.
	OnStateChange func(name string, from, to State)
	// Clock and Rand time the probe schedule, for tests; default the real
	// clock and math/rand/v2. gobreaker's window runs on the real clock.
	Clock Clock
	Rand  func() float64
}

// Defaults of the zero Config.
const (
	DefaultFailures     = 5
	DefaultWindow       = time.Minute
	DefaultOpenMin      = 375 * time.Millisecond
	DefaultOpenMax      = 30 * time.Second
	DefaultJitter       = 0.2
	DefaultProbeTimeout = time.Second
)

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "breaker"
	}
	if c.Failures == 0 {
		c.Failures = DefaultFailures
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.OpenMin <= 0 {
		c.OpenMin = DefaultOpenMin
	}
	if c.OpenMax <= 0 {
		c.OpenMax = DefaultOpenMax
	}
	c.OpenMin = min(c.OpenMin, c.OpenMax)
	if !(c.Jitter > 0 && c.Jitter < 1) {
		c.Jitter = DefaultJitter
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.Probe == nil {
		panic("breaker: Config.Probe is required")
	}
	if c.IsFailure == nil {
		c.IsFailure = func(error) bool { return true }
	}
	if c.IsExcluded == nil {
		c.IsExcluded = func(err error) bool { return errors.Is(err, context.Canceled) }
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// Clock is the time source of the schedule; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop prevents the
	// call and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
