package db

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGateRefusesOverdueWaiters: in a standing queue, a read or report
// that has already waited longer than the standing queue's budget (two
// holds) when a connection is handed back is refused then (503 +
// Retry-After), not served late; checkout is served however long it
// waited, a burst (no standing queue) is served in full, and so is every
// waiter under ADMISSION=queue (only the queue cap refuses there). The clock is
// the gate's own (g.now), and the waiter has no deadline: without the drop
// it could only be served.
func TestGateRefusesOverdueWaiters(t *testing.T) {
	const hold = 10 * time.Millisecond // budget: 2 × hold = 20 ms
	cases := []struct {
		name     string
		priority Priority
		waited   time.Duration
		queue    bool // AdmitQueue: no deadline admission
		refused  bool
	}{
		{"standing queue: overdue read refused", Normal, 2 * lifoAfter, false, true},
		{"standing queue: overdue report refused", Low, 2 * lifoAfter, false, true},
		{"standing queue: overdue checkout served", Critical, 2 * lifoAfter, false, false},
		{"burst: a read past the budget is still served", Normal, lifoAfter / 2, false, false},
		{"ADMISSION=queue: an overdue read is served", Normal, 2 * lifoAfter, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, held := fullGate(t, 1, 0)
			now := time.Now()
			g.now = func() time.Time { return now }
			ctx := WithClass(context.Background(), &Class{Priority: tc.priority})
			done := make(chan error, 1)
			go func() {
				leave, err := g.enter(ctx, hold, entry{byDeadline: !tc.queue})
				if err == nil {
					leave()
				}
				done <- err
			}()
			for g.queued() != 1 {
				time.Sleep(time.Millisecond)
			}
			now = now.Add(tc.waited)
			held[0]() // the hand-over: the only waiter is the one judged
			err := <-done
			var refused *RefusedError
			if got := errors.As(err, &refused); got != tc.refused {
				t.Fatalf("waited %s: refused %v (%v), want %v", tc.waited, got, err, tc.refused)
			}
			if tc.refused && (!errors.Is(err, ErrSaturated) || refused.RetryAfter <= 0) {
				t.Errorf("refusal %v: want ErrSaturated with a Retry-After", err)
			}
			// A refusal hands the connection on: it is free again.
			leave, err := g.enter(context.Background(), hold, entry{byDeadline: true})
			if err != nil {
				t.Fatalf("after the hand-over: %v, want the connection free", err)
			}
			leave()
		})
	}
}
