package cache

import "sync/atomic"

// Stats counts what the protections did. Counters only grow.
type Stats struct {
	hits, l1Hits, misses, stales, negatives atomic.Int64
	loads, loadErrors, shared               atomic.Int64
	lockAcquired, lockContended             atomic.Int64
	lockTimeouts, lockLost, extensions      atomic.Int64
	refreshes, corrupt                      atomic.Int64
	l1Invalidations, l1Flushes              atomic.Int64
	fillSignals, signalWakeups              atomic.Int64
	copyMisses, copiesRevoked               atomic.Int64
	outageHolds                             atomic.Int64
	replays, outOfBounds                    atomic.Int64
	invalidationsRetried                    atomic.Int64
}

// StatsSnapshot is a copy of the counters at one moment.
type StatsSnapshot struct {
	Hits, L1Hits, Misses, Stales, Negatives int64
	Loads, LoadErrors, SharedWaits          int64
	LockAcquired, LockContended             int64
	LockTimeouts, LockLost, Extensions      int64
	Refreshes, Corrupt                      int64
	// L1Invalidations counts keys named by invalidation messages (pub/sub
	// or tracking); L1Flushes counts times tracking emptied L1 because
	// invalidations may have been missed (disconnect, resubscribe, FLUSHDB).
	L1Invalidations, L1Flushes int64
	// FillSignals counts fill messages heard (any instance's fills);
	// SignalWakeups counts waits a signal ended before the poll timer.
	FillSignals, SignalWakeups int64
	// CopyMisses counts reads that found no hot-key copy and fell back to
	// the entry itself.
	CopyMisses int64
	// CopiesRevoked counts copy writes undone because a newer write or an
	// invalidation replaced the entry meanwhile.
	CopiesRevoked int64
	// OutageHolds counts reads answered, while Redis was unusable, from an
	// L1 value held past its L1 TTL (outage.go); they are in L1Hits too.
	OutageHolds int64
	// Replays counts genuine entries refused as older than a version
	// already seen; OutOfBounds counts entries refused for a lifetime
	// beyond the TTLs or past their hard expiry (bounds.go). Both are
	// reloaded, like Corrupt ones.
	Replays, OutOfBounds int64
	// InvalidationsRetried counts failed invalidations that went through
	// on a later try; InvalidationsPending is how many wait for one now
	// (pending.go).
	InvalidationsRetried, InvalidationsPending int64
}

func (s *Stats) snapshot() StatsSnapshot {
	return StatsSnapshot{
		Hits: s.hits.Load(), L1Hits: s.l1Hits.Load(), Misses: s.misses.Load(),
		Stales: s.stales.Load(), Negatives: s.negatives.Load(),
		Loads: s.loads.Load(), LoadErrors: s.loadErrors.Load(), SharedWaits: s.shared.Load(),
		LockAcquired: s.lockAcquired.Load(), LockContended: s.lockContended.Load(),
		LockTimeouts: s.lockTimeouts.Load(), LockLost: s.lockLost.Load(), Extensions: s.extensions.Load(),
		Refreshes: s.refreshes.Load(), Corrupt: s.corrupt.Load(),
		L1Invalidations: s.l1Invalidations.Load(), L1Flushes: s.l1Flushes.Load(),
		FillSignals: s.fillSignals.Load(), SignalWakeups: s.signalWakeups.Load(),
		CopyMisses: s.copyMisses.Load(), CopiesRevoked: s.copiesRevoked.Load(),
		OutageHolds: s.outageHolds.Load(),
		Replays:     s.replays.Load(), OutOfBounds: s.outOfBounds.Load(),
		InvalidationsRetried: s.invalidationsRetried.Load(),
	}
}
