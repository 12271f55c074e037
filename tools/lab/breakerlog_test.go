package main

import (
	"testing"
	"time"
)

func TestClosedAfter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := func(ms int, from, to string) breakerTransition {
		return breakerTransition{At: at(ms), From: from, To: to}
	}
	for _, tc := range []struct {
		name string
		log  []breakerTransition
		want time.Duration
	}{
		{"never opened", nil, 0},
		{"closed before t", []breakerTransition{tr(-500, "closed", "open"), tr(-100, "half-open", "closed")}, 0},
		{"closed after t", []breakerTransition{tr(-500, "closed", "open"), tr(300, "open", "half-open"), tr(310, "half-open", "closed")}, 310 * time.Millisecond},
		{"failed probe, then closed", []breakerTransition{tr(-500, "closed", "open"), tr(100, "half-open", "open"), tr(700, "half-open", "closed")}, 700 * time.Millisecond},
		{"still open", []breakerTransition{tr(-500, "closed", "open"), tr(100, "open", "half-open"), tr(110, "half-open", "open")}, -1},
		{"open at t, no change since", []breakerTransition{tr(-500, "closed", "open")}, -1},
	} {
		if got := closedAfter([][]breakerTransition{tc.log}, t0)[0]; got != tc.want {
			t.Errorf("%s: closedAfter = %s, want %s", tc.name, got, tc.want)
		}
	}
}
