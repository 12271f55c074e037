package middleware

import (
	"sync"
	"sync/atomic"
	"time"
)

// leaseBuckets maps client keys to their lease buckets, bounded to max.
//
// It replaces an LRU: an LRU's Get moves the entry to the front under one
// lock, a write to shared memory on every request, and every core that
// serves a hot client queues on it. A sync.Map read of a known key writes
// nothing. The bound is kept by sweeping instead: when an insert takes the
// count past max, one sweeper drops the buckets whose lease has lapsed
// (they hold nothing: their tokens died with their window), then, if that
// is not enough, any others until a tenth of max is free. Forgetting a live
// bucket costs its unspent lease — the fleet admits less, never more — and
// its next request takes a new lease.
type leaseBuckets struct {
	m     sync.Map // string → *leaseBucket
	n     atomic.Int64
	max   int64
	sweep sync.Mutex
}

// get returns key's bucket, adding it if new (racing adders share one).
func (bs *leaseBuckets) get(key string) *leaseBucket {
	if b, ok := bs.m.Load(key); ok {
		return b.(*leaseBucket)
	}
	b, loaded := bs.m.LoadOrStore(key, &leaseBucket{})
	if !loaded && bs.n.Add(1) > bs.max && bs.sweep.TryLock() {
		// One sweeper at a time; inserts meanwhile do not wait for it.
		defer bs.sweep.Unlock()
		bs.shrink(time.Now().UnixNano())
	}
	return b.(*leaseBucket)
}

// shrink drops lapsed buckets, then any, until a tenth of max is free.
func (bs *leaseBuckets) shrink(now int64) {
	target := bs.max - max(1, bs.max/10)
	bs.m.Range(func(k, v any) bool {
		// A bucket without a lease yet is one being added: kept.
		if l := v.(*leaseBucket).cur.Load(); l != nil && now >= l.until {
			bs.delete(k)
		}
		return true
	})
	bs.m.Range(func(k, _ any) bool {
		if bs.n.Load() <= target {
			return false
		}
		bs.delete(k)
		return true
	})
}

// delete forgets key's bucket.
func (bs *leaseBuckets) delete(key any) {
	if _, ok := bs.m.LoadAndDelete(key); ok {
		bs.n.Add(-1)
	}
}
