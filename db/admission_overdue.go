package db

import "time"

// The overdue drop: in a standing queue, a read that has already waited
// longer than its budget when a connection is handed back is refused then
// (releaseLocked), so what is served was queued for about the budget at
// most and never comes too late to matter.

// budget is how long a caller may stay in a standing queue before it is
// overdue: judge's cap on a read's wait there. Checkout has none, nor
// anyone under AdmitQueue (only the queue cap refuses there).
func (e entry) budget(p Priority, hold time.Duration) time.Duration {
	if p == Critical || !e.byDeadline {
		return 0
	}
	return max(minStandingWait, 2*hold)
}

// overdue reports, at hand-over, a read or report that has already waited
// longer than a standing queue lets it (its budget): served now, its
// answer would come late, so it is refused (CoDel's drop at dequeue), as
// its caller would have been at the door had the queue been standing then.
func (g *gate) overdue(w *waiter) bool {
	return w.budget > 0 && g.overloaded() && g.now().Sub(w.since) > w.budget
}

// outcome is what a waiter whose ready channel closed got.
func (w *waiter) outcome(g *gate) (func(), error) {
	if w.refused != nil {
		return nil, w.refused
	}
	return g.release, nil
}
