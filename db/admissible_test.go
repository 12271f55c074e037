package db

import (
	"context"
	"testing"
	"time"
)

// TestGateWouldRefuseAsEnterWould: asking (wouldRefuse) gives the verdict
// entering would, taking nothing and queueing nobody: a free slot and a
// wait that fits are admitted; a full queue cap and a wait beyond the
// caller's share of its deadline are refused.
func TestGateWouldRefuseAsEnterWould(t *testing.T) {
	cases := []struct {
		name     string
		priority Priority
		free     bool // a connection is free
		wait     time.Duration
		e        entry
		refused  bool
	}{
		{"free slot", Normal, true, 0, entry{byDeadline: true}, false},
		{"wait fits half the deadline", Normal, false, 300 * time.Millisecond, entry{byDeadline: true}, false},
		{"wait beyond half the deadline", Normal, false, 600 * time.Millisecond, entry{byDeadline: true}, true},
		{"checkout may wait it all", Critical, false, 600 * time.Millisecond, entry{byDeadline: true}, false},
		{"queue cap reached", Normal, false, 0, entry{maxWaiting: 0, hasMax: true}, true},
		{"queue cap not reached", Normal, false, 0, entry{maxWaiting: 1, hasMax: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, held := fullGate(t, 1, 0)
			if tc.free {
				held[0]()
			}
			ctx, cancel := context.WithTimeout(WithClass(context.Background(), &Class{Priority: tc.priority}), time.Second)
			defer cancel()
			got := g.wouldRefuse(ctx, fixedWait(tc.wait), tc.e)
			if (got != nil) != tc.refused {
				t.Errorf("wouldRefuse: %v, want refused %v", got, tc.refused)
			}
			if g.queued() != 0 || (tc.free && g.free != 1) {
				t.Errorf("asking changed the gate: %d queued, %d free", g.queued(), g.free)
			}
			if !tc.refused && !tc.free {
				return // entering would queue: nothing more to compare at once
			}
			leave, err := g.enter(ctx, fixedWait(tc.wait), tc.e)
			if _, isRefusal := err.(*RefusedError); isRefusal != tc.refused {
				t.Errorf("enter disagrees: %v, want refused %v", err, tc.refused)
			}
			if leave != nil {
				leave()
			}
		})
	}
}
