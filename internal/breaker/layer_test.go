package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/breaker"
)

// TestReadsDoNotMoveGobreaker: gobreaker moves from open to half-open when
// its state is read after its Timeout (1 ns here). Reading the layer's
// state, snapshot or time to the probe, and refused calls, long after that
// must leave it open, with no probe started and no user call run, until
// the layer's own timer runs the probe.
func TestReadsDoNotMoveGobreaker(t *testing.T) {
	r := newRig(t, breaker.Config{Failures: 1, OpenMin: time.Second})
	r.trip(t)
	time.Sleep(5 * time.Millisecond) // real time: gobreaker's Timeout has long passed
	for range 100 {
		_ = r.b.State()
		_ = r.b.Snapshot()
		if err := r.b.Do(func() error { t.Error("a user call ran while open"); return nil }); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("call while open: got %v, want ErrOpen", err)
		}
	}
	if s := r.b.Snapshot(); s.State != breaker.Open || s.Probes != 0 {
		t.Fatalf("after reads while open: got %s with %d probes, want open with none", s.State, s.Probes)
	}
	r.clock.Advance(time.Second)
	if got := r.probeTimes(); len(got) != 1 || got[0] != time.Second {
		t.Errorf("probes after the first wait: got %v, want one at +1s", got)
	}
}

// TestProbeErrorsAlwaysFail: a probe that times out re-opens the breaker
// and arms the next probe, even where the caller's deadline is an excluded
// error for user calls (as in package db).
func TestProbeErrorsAlwaysFail(t *testing.T) {
	clock := newFakeClock()
	var probes int
	b := breaker.New(breaker.Config{
		Failures: 1, OpenMin: ms(100), Clock: clock, Rand: func() float64 { return 0 },
		IsExcluded: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		Probe:      func(context.Context) error { probes++; return context.DeadlineExceeded },
	})
	defer b.Close()
	_ = b.Do(func() error { return errDown })
	clock.Advance(ms(100 + 200))
	s := b.Snapshot()
	if s.State != breaker.Open || s.FailedProbes != 2 || probes != 2 || s.NextProbeSeconds != 0.4 {
		t.Errorf("after two timed-out probes: got %s, %d failed of %d, next in %vs; want open, 2 of 2, 0.4s",
			s.State, s.FailedProbes, probes, s.NextProbeSeconds)
	}
}

// TestWindowForgetsOldErrors: gobreaker's rolling window (real time) drops
// an outage error older than Window from the streak; within the window the
// same two errors open the breaker.
func TestWindowForgetsOldErrors(t *testing.T) {
	tests := []struct {
		window   time.Duration
		wantOpen bool
	}{
		{50 * time.Millisecond, false}, // the pause is 4 windows: the first error has aged out
		{time.Minute, true},
	}
	for _, tc := range tests {
		r := newRig(t, breaker.Config{Failures: 2, Window: tc.window})
		_ = r.b.Do(func() error { return errDown })
		time.Sleep(200 * time.Millisecond)
		_ = r.b.Do(func() error { return errDown })
		if got := r.b.State() == breaker.Open; got != tc.wantOpen {
			t.Errorf("window %s, two errors 200ms apart: got open %v, want %v", tc.window, got, tc.wantOpen)
		}
	}
}
