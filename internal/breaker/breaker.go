// Package breaker is the circuit breaker of the PostgreSQL pools and the
// Redis client: a thin layer on github.com/sony/gobreaker/v2 that adds the
// one thing gobreaker does not have, a recovery schedule that follows the
// outage.
//
// gobreaker owns the breaker. It counts outcomes in a rolling window
// (Window, in ten buckets of BucketPeriod), trips on Failures consecutive
// outage errors (ReadyToTrip), decides what counts (IsSuccessful from
// Config.IsFailure; IsExcluded from Config.IsExcluded, so a caller's own
// cancellation or a request's mistake never trips it nor resets a streak),
// ignores late results of calls admitted before a transition (its
// generations), holds the single half-open slot (MaxRequests 1) and
// reports every transition (OnStateChange).
//
// The layer owns the time after opening. gobreaker's open time is fixed,
// and its move from open to half-open is lazy: the first request or read of
// its state after Timeout takes the half-open slot, which could be a user's
// request to a dead dependency. So the layer keeps users out itself from
// the moment gobreaker opens until it closes again, and in between it is
// the only caller of gobreaker: when its own timer fires, it asks gobreaker
// for the half-open slot (TwoStepCircuitBreaker.Allow; gobreaker's Timeout
// is 1 ns, so the slot is always free by then) and runs its cheap health
// Probe in it, never a user's request. A failed probe re-opens gobreaker and
// the layer waits twice as long (up to OpenMax, jittered) before the next;
// a successful one closes gobreaker, and the next opening starts again at
// OpenMin. A blip therefore costs a fraction of a second, and a long outage
// a handful of probes per instance. Refused users get an *OpenError whose
// RetryAfter is the time to the next probe.
//
// Every call into gobreaker is made under the layer's mutex, so its
// OnStateChange runs under that mutex too and the layer's copy of the state
// changes in step with gobreaker's. State and Snapshot read that copy, never
// gobreaker's State(), so reading the state never moves gobreaker.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
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
	cb  *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu           sync.Mutex // guards everything below and every call into cb
	state        State      // cb's state, as its OnStateChange last reported it
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
	b := &Breaker{cfg: cfg, ctx: ctx, cancel: cancel}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](b.settings())
	return b
}

// Do runs call if the breaker is closed and hands its outcome to gobreaker.
// Otherwise it returns an *OpenError (matching ErrOpen) without calling.
func (b *Breaker) Do(call func() error) error {
	b.mu.Lock()
	if b.state != Closed {
		err := &OpenError{Name: b.cfg.Name, RetryAfter: b.untilProbeLocked()}
		b.mu.Unlock()
		return err
	}
	done, err := b.cb.Allow() // closed: gobreaker counts the request and lets it pass
	b.mu.Unlock()
	if err != nil {
		return &OpenError{Name: b.cfg.Name}
	}

	err = call()

	b.mu.Lock()
	defer b.mu.Unlock()
	// A result that ends while the breaker is open or probing belongs to
	// the generation before the opening, and gobreaker would ignore it; but
	// handing it over would make gobreaker read its state, which (Timeout
	// being 1 ns) moves it to half-open outside the schedule. After a
	// recovery, gobreaker's generations drop it.
	if b.state == Closed {
		done(err)
	}
	return err
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
