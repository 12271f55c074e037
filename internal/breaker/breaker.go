// Package breaker is the circuit breaker shared by the PostgreSQL pools and
// the Redis client: closed → open after consecutive outage errors → half-open
// while the breaker's own cheap health probe runs → closed on success, open
// again on failure.
//
// Unlike a breaker with a fixed open time, its open time follows the outage:
// the first probe comes soon after opening (OpenMin, jittered so instances do
// not probe together), each failed probe doubles the wait up to OpenMax, and
// a successful probe resets it. A blip therefore costs a fraction of a
// second, and a long outage costs a handful of probes per instance.
//
// While open or half-open, no user call reaches the dependency: the probe is
// a health query the breaker runs itself, one at a time, so a recovering
// dependency sees one query per instance instead of a burst of user
// requests that might time out.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrOpen is matched (errors.Is) by every refusal: the call was not made.
var ErrOpen = errors.New("circuit breaker open")

// OpenError is a refusal, with the time until the next probe.
type OpenError struct {
	Name       string
	RetryAfter time.Duration // until the next probe; 0 while a probe is running
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("%s: %v (next probe in %s)", e.Name, ErrOpen, e.RetryAfter.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Breaker guards one dependency. Its zero value is not usable; call New.
type Breaker struct {
	cfg Config

	mu           sync.Mutex // guards everything below
	state        State
	gen          uint64 // bumped on every transition; late results of older calls are ignored
	failures     uint32 // consecutive outage errors while closed
	failedProbes int
	probes       int64         // probes started, ever
	wait         time.Duration // nominal (unjittered) wait before the next probe
	nextProbe    time.Time     // zero unless open
	stopTimer    func() bool   // cancels the scheduled probe
	shut         bool          // Close was called

	ctx     context.Context // cancelled by Close: ends a running probe
	cancel  context.CancelFunc
	running sync.WaitGroup // the scheduled or running probe
}

// New builds a closed breaker. cfg.Probe is required.
func New(cfg Config) *Breaker {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Breaker{cfg: cfg, ctx: ctx, cancel: cancel}
}

// Do runs call if the breaker is closed and counts its outcome. Otherwise it
// returns an *OpenError (matching ErrOpen) without calling.
func (b *Breaker) Do(call func() error) error {
	b.mu.Lock()
	if b.state != Closed {
		err := &OpenError{Name: b.cfg.Name, RetryAfter: b.untilProbeLocked()}
		b.mu.Unlock()
		return err
	}
	gen := b.gen
	b.mu.Unlock()

	err := call()
	b.record(gen, err)
	return err
}

// record counts one call's outcome, unless it is excluded or the breaker
// has moved on since the call started (a result from before an opening or
// a recovery says nothing about now).
func (b *Breaker) record(gen uint64, err error) {
	if err != nil && b.cfg.IsExcluded(err) {
		return // says nothing about the dependency: neither failure nor success
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen || b.state != Closed {
		return
	}
	if err == nil || !b.cfg.IsFailure(err) {
		b.failures = 0
		return
	}
	b.failures++
	if b.failures >= b.cfg.Failures {
		b.failedProbes = 0
		b.wait = b.cfg.OpenMin
		b.setLocked(Open)
		b.scheduleLocked()
	}
}

// scheduleLocked arms the next probe after a jittered b.wait. The timer's
// callback owns one count of b.running until it returns, or until Close
// stops the timer first.
func (b *Breaker) scheduleLocked() {
	if b.shut {
		return
	}
	d := jittered(b.wait, b.cfg.Jitter, b.cfg.Rand())
	b.nextProbe = b.cfg.Clock.Now().Add(d)
	b.running.Add(1)
	b.stopTimer = b.cfg.Clock.AfterFunc(d, func() {
		defer b.running.Done()
		b.probe()
	})
}

// probe runs the health query once, half-open, and closes or re-opens the
// breaker. Only the timer calls it, and the next timer is armed only after
// it returns, so probes never overlap.
func (b *Breaker) probe() {
	b.mu.Lock()
	if b.shut || b.state != Open {
		b.mu.Unlock()
		return
	}
	b.nextProbe = time.Time{}
	b.probes++
	b.setLocked(HalfOpen)
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.ProbeTimeout)
	err := b.cfg.Probe(ctx)
	cancel()

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shut {
		return
	}
	if err == nil {
		b.failures, b.failedProbes, b.wait = 0, 0, 0
		b.setLocked(Closed)
		return
	}
	b.failedProbes++
	b.wait = min(2*b.wait, b.cfg.OpenMax)
	b.setLocked(Open)
	b.scheduleLocked()
}

// setLocked moves to s and tells OnStateChange, under the lock so that
// observers see transitions in order.
func (b *Breaker) setLocked(s State) {
	from := b.state
	b.state = s
	b.gen++
	if from != s && b.cfg.OnStateChange != nil {
		b.cfg.OnStateChange(b.cfg.Name, from, s)
	}
}

// untilProbeLocked is the time to the next probe: 0 while one runs.
func (b *Breaker) untilProbeLocked() time.Duration {
	if b.nextProbe.IsZero() {
		return 0
	}
	return max(0, b.nextProbe.Sub(b.cfg.Clock.Now()))
}

// Close stops the probe schedule, cancels a running probe and waits for
// it. The breaker then refuses nothing new; it stays in its last state.
func (b *Breaker) Close() {
	b.mu.Lock()
	b.shut = true
	if b.stopTimer != nil && b.stopTimer() {
		b.running.Done() // the callback will never run
	}
	b.stopTimer = nil
	b.mu.Unlock()
	b.cancel()
	b.running.Wait()
}

// jittered shortens d by up to the fraction j (u in [0, 1)): the wait never
// exceeds the nominal schedule, and instances that opened together drift
// apart instead of probing in step.
func jittered(d time.Duration, j, u float64) time.Duration {
	return d - time.Duration(float64(d)*j*u)
}
