package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/breaker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("connection refused")

// rig is a breaker on a fake clock whose probe fails until healthy is set,
// recording when each probe started (as offsets from the rig's start).
type rig struct {
	b       *breaker.Breaker
	clock   *fakeClock
	start   time.Time
	healthy atomic.Bool
	mu      sync.Mutex // guards probes
	probes  []time.Duration
}

func newRig(t *testing.T, cfg breaker.Config) *rig {
	t.Helper()
	r := &rig{clock: newFakeClock()}
	r.start = r.clock.Now()
	cfg.Clock = r.clock
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0 } // no jitter unless the test wants it
	}
	cfg.Probe = func(context.Context) error {
		r.mu.Lock()
		r.probes = append(r.probes, r.clock.Now().Sub(r.start))
		r.mu.Unlock()
		if r.healthy.Load() {
			return nil
		}
		return errDown
	}
	r.b = breaker.New(cfg)
	t.Cleanup(r.b.Close)
	return r
}

// trip fails calls until the breaker opens, at the rig's current time.
func (r *rig) trip(t *testing.T) {
	t.Helper()
	for range 100 {
		if r.b.State() == breaker.Open {
			return
		}
		_ = r.b.Do(func() error { return errDown })
	}
	t.Fatalf("breaker did not open after 100 failures")
}

func (r *rig) probeTimes() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.probes...)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestScheduleDoublesToCap: the first probe comes OpenMin after opening,
// each failed probe doubles the wait, and the wait stops growing at OpenMax.
func TestScheduleDoublesToCap(t *testing.T) {
	r := newRig(t, breaker.Config{Failures: 1, OpenMin: ms(250), OpenMax: 30 * time.Second})
	r.trip(t)
	r.clock.Advance(2 * time.Minute)
	// Waits 0.25, 0.5, 1, 2, 4, 8, 16, 30 (cap), 30, 30 s.
	want := []time.Duration{ms(250), ms(750), ms(1750), ms(3750), ms(7750), ms(15750), ms(31750), ms(61750), ms(91750)}
	got := r.probeTimes()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("probe times: got %v, want %v", got, want)
	}
	s := r.b.Snapshot()
	if s.State != breaker.Open || s.FailedProbes != len(want) {
		t.Errorf("snapshot: got %s with %d failed probes, want open with %d", s.State, s.FailedProbes, len(want))
	}
	if next := s.NextProbe.Sub(r.start); next != ms(121750) {
		t.Errorf("next probe: got +%s, want +121.75s (30 s after the last)", next)
	}
}

// TestProbesInAMinute: however the jitter falls, a 60 s outage costs an
// instance at most 8 probes (the "~8"), and at least 7.
func TestProbesInAMinute(t *testing.T) {
	for _, u := range []float64{0, 0.5, 0.999999} {
		t.Run(fmt.Sprint(u), func(t *testing.T) {
			r := newRig(t, breaker.Config{Failures: 1, Rand: func() float64 { return u }})
			r.trip(t)
			r.clock.Advance(60 * time.Second)
			if n := len(r.probeTimes()); n < 7 || n > 8 {
				t.Errorf("jitter draw %v: %d probes in 60 s (%v), want 7 or 8", u, n, r.probeTimes())
			}
		})
	}
}

// TestSuccessResets: a successful probe closes the breaker and resets the
// schedule, so the next outage starts again at OpenMin, not at the wait the
// last one had reached.
func TestSuccessResets(t *testing.T) {
	r := newRig(t, breaker.Config{Failures: 2, OpenMin: ms(100), OpenMax: 10 * time.Second})
	r.trip(t)
	r.clock.Advance(ms(100 + 200 + 400)) // three failed probes
	if s := r.b.Snapshot(); s.FailedProbes != 3 || s.NextProbeSeconds != 0.8 {
		t.Fatalf("after 3 failed probes: got %d failed, next in %vs; want 3, 0.8s", s.FailedProbes, s.NextProbeSeconds)
	}
	r.healthy.Store(true)
	r.clock.Advance(ms(800))
	if s := r.b.Snapshot(); s.State != breaker.Closed || s.FailedProbes != 0 || !s.NextProbe.IsZero() {
		t.Fatalf("after a good probe: got %+v, want closed, 0 failed probes, no next probe", s)
	}
	if r.clock.pending() != 0 {
		t.Errorf("closed breaker still has %d probes scheduled", r.clock.pending())
	}
	if err := r.b.Do(func() error { return nil }); err != nil {
		t.Errorf("call after recovery: got %v, want it to run", err)
	}

	r.healthy.Store(false)
	opened := r.clock.Now().Sub(r.start)
	r.trip(t)
	r.clock.Advance(ms(100))
	probes := r.probeTimes()
	if last := probes[len(probes)-1]; last != opened+ms(100) {
		t.Errorf("first probe of the second outage at +%s, want +%s (OpenMin after opening)", last, opened+ms(100))
	}
}

// TestJitterBounds: a wait is shortened by at most Jitter of itself, never
// lengthened, and different draws spread instances apart.
func TestJitterBounds(t *testing.T) {
	tests := []struct {
		u         float64
		wantFirst time.Duration
	}{
		{0, ms(1000)},
		{0.5, ms(900)},
		{0.999999, ms(800)},
	}
	for _, tc := range tests {
		r := newRig(t, breaker.Config{Failures: 1, OpenMin: time.Second, Jitter: 0.2, Rand: func() float64 { return tc.u }})
		r.trip(t)
		r.clock.Advance(ms(1500))
		got := r.probeTimes()
		if len(got) == 0 || (got[0]-tc.wantFirst).Abs() > time.Microsecond {
			t.Errorf("draw %v: first probe at %v, want %s", tc.u, got, tc.wantFirst)
			continue
		}
		if got[0] < ms(800) || got[0] > ms(1000) {
			t.Errorf("draw %v: first probe at %s, outside [0.8 s, 1 s]", tc.u, got[0])
		}
	}
}

// TestOpenRefusesWithTimeToProbe: while open, calls are refused without
// running, and the refusal says how long until the next probe.
func TestOpenRefusesWithTimeToProbe(t *testing.T) {
	r := newRig(t, breaker.Config{Failures: 3, OpenMin: time.Second})
	r.trip(t)
	r.clock.Advance(ms(300))
	ran := false
	err := r.b.Do(func() error { ran = true; return nil })
	var open *breaker.OpenError
	if !errors.As(err, &open) || !errors.Is(err, breaker.ErrOpen) || ran {
		t.Fatalf("call while open: got %v (ran %v), want an OpenError and no call", err, ran)
	}
	if open.RetryAfter != ms(700) {
		t.Errorf("RetryAfter: got %s, want 700ms", open.RetryAfter)
	}
}

// TestExcludedErrorsDoNotResetTheStreak: a caller's cancellation between
// outage errors is neither a failure nor a success; a plain non-outage
// error (a missing row) is a success and resets the streak.
func TestExcludedErrorsDoNotResetTheStreak(t *testing.T) {
	errMissing := errors.New("not found")
	tests := []struct {
		name     string
		calls    []error
		wantOpen bool
	}{
		{"three outages", []error{errDown, errDown, errDown}, true},
		{"cancellation in between", []error{errDown, errDown, context.Canceled, errDown}, true},
		{"only cancellations", []error{context.Canceled, context.Canceled, context.Canceled}, false},
		{"not-found in between", []error{errDown, errDown, errMissing, errDown}, false},
	}
	for _, tc := range tests {
		r := newRig(t, breaker.Config{Failures: 3, IsFailure: func(err error) bool { return errors.Is(err, errDown) }})
		for _, e := range tc.calls {
			_ = r.b.Do(func() error { return e })
		}
		if got := r.b.State() == breaker.Open; got != tc.wantOpen {
			t.Errorf("%s: got open %v, want %v", tc.name, got, tc.wantOpen)
		}
	}
}

// TestLateResultIgnored: a call admitted before the breaker opened that
// ends after cannot close it; one that ends after a recovery cannot count
// against the newly closed breaker (its failure belongs to the outage).
func TestLateResultIgnored(t *testing.T) {
	r := newRig(t, breaker.Config{Failures: 1, OpenMin: ms(100)})
	slow := func(result error) (release func()) {
		ch, entered, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			_ = r.b.Do(func() error { close(entered); <-ch; return result })
		}()
		<-entered // admitted while closed
		return func() { close(ch); <-done }
	}

	release := slow(nil)
	r.trip(t)
	release()
	if s := r.b.State(); s != breaker.Open {
		t.Errorf("after a late success: got %s, want open (only the probe closes it)", s)
	}

	r.healthy.Store(true)
	r.clock.Advance(ms(100)) // the probe closes it
	release = slow(errDown)
	r.trip(t)
	r.clock.Advance(ms(100)) // closed again by the next probe
	if s := r.b.State(); s != breaker.Closed {
		t.Fatalf("after the second probe: got %s, want closed", s)
	}
	release()
	if s := r.b.State(); s != breaker.Closed {
		t.Errorf("after a failure from before the recovery: got %s, want closed", s)
	}
}

// TestOneProbeAtATime: while a probe hangs, many concurrent callers are all
// refused at once, none of them reaches the dependency, and however far the
// clock moves no second probe starts.
func TestOneProbeAtATime(t *testing.T) {
	clock := newFakeClock()
	var inFlight, maxInFlight, probes atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	b := breaker.New(breaker.Config{
		Failures: 1, OpenMin: ms(100), Clock: clock, Rand: func() float64 { return 0 },
		Probe: func(ctx context.Context) error {
			probes.Add(1)
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
			}
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return errDown
		},
	})
	defer b.Close()
	_ = b.Do(func() error { return errDown })

	advanced := make(chan struct{})
	go func() { clock.Advance(ms(100)); close(advanced) }() // runs the probe, which hangs
	<-started
	if s := b.State(); s != breaker.HalfOpen {
		t.Fatalf("while the probe runs: got %s, want half-open", s)
	}

	var reached atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			err := b.Do(func() error { reached.Add(1); return nil })
			var open *breaker.OpenError
			if !errors.As(err, &open) || open.RetryAfter != 0 {
				t.Errorf("call while half-open: got %v, want an OpenError with RetryAfter 0 (probe running)", err)
			}
		})
		wg.Go(func() { clock.Advance(time.Second) })
	}
	wg.Wait()
	if n := reached.Load(); n != 0 {
		t.Errorf("%d user calls reached the dependency while half-open, want 0", n)
	}
	if n := probes.Load(); n != 1 {
		t.Errorf("probes while one hangs: got %d, want 1", n)
	}
	close(release)
	<-advanced
	if m := maxInFlight.Load(); m != 1 {
		t.Errorf("probes in flight at once: got %d, want 1", m)
	}
}

// TestCloseStopsProbes: Close cancels the schedule on the real clock and
// ends a running probe; goleak (TestMain) sees no goroutine left.
func TestCloseStopsProbes(t *testing.T) {
	var probes atomic.Int64
	b := breaker.New(breaker.Config{Failures: 1, OpenMin: ms(1), OpenMax: ms(1),
		Probe: func(ctx context.Context) error { probes.Add(1); <-ctx.Done(); return ctx.Err() }})
	_ = b.Do(func() error { return errDown })
	for probes.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	b.Close()
	n := probes.Load()
	time.Sleep(20 * time.Millisecond)
	if probes.Load() != n {
		t.Errorf("probes went on after Close: %d, then %d", n, probes.Load())
	}
}

// TestRecoveryLag: with the default schedule, a dependency that returns T
// after the breaker opened is found by the first probe after T. For the
// issue's 2 s blip that is within 1 s whatever the jitter; in general the
// lag of a doubling schedule is at most about T + OpenMin (the wait in force
// then), capped by OpenMax.
func TestRecoveryLag(t *testing.T) {
	tests := []struct {
		back    time.Duration // outage length after opening
		maxLag  time.Duration
		comment string
	}{
		{ms(1950), time.Second, "2 s blip (the breaker opens ~50 ms into it)"},
		{ms(300), ms(700), "a blip shorter than the first wait"},
		{5 * time.Second, 5*time.Second + breaker.DefaultOpenMin, "5 s"},
		{20 * time.Second, 20*time.Second + breaker.DefaultOpenMin, "20 s"},
		{5 * time.Minute, breaker.DefaultOpenMax, "long outage: lag capped by OpenMax"},
	}
	for _, tc := range tests {
		for _, u := range []float64{0, 0.5, 0.999999} {
			clock := newFakeClock()
			start := clock.Now()
			var closedAt time.Duration
			b := breaker.New(breaker.Config{
				Failures: 1, Clock: clock, Rand: func() float64 { return u },
				OnStateChange: func(_ string, _, to breaker.State) {
					if to == breaker.Closed {
						closedAt = clock.Now().Sub(start)
					}
				},
				Probe: func(context.Context) error {
					if clock.Now().Sub(start) >= tc.back {
						return nil
					}
					return errDown
				},
			})
			_ = b.Do(func() error { return errDown })
			clock.Advance(tc.back + breaker.DefaultOpenMax + time.Second)
			b.Close()
			if lag := closedAt - tc.back; closedAt == 0 || lag > tc.maxLag {
				t.Errorf("%s, jitter draw %v: closed at +%s, %s after the dependency returned; want ≤ %s",
					tc.comment, u, closedAt, lag, tc.maxLag)
			}
		}
	}
}
