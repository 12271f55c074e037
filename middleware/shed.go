package middleware

import (
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// Queue is a connection pool's wait queue as the shedder sees it: Queued
// counts the callers waiting for a place, not those being handed one.
type Queue interface {
	Queued() int64
	DrainEstimate() time.Duration
}

// Shed refuses a request at the door, before the handler runs, while the
// queue of the pool it needs already holds maxWaiting: for classes whose
// every request needs the database (checkout, reports), that refusal costs
// nothing at all. maxWaiting is the longest queue the class may join: small
// for low-value work, larger for checkout, so the low class is shed first.
// The pool itself refuses a request at the moment it would queue past its
// class's cap (db.Class), which is all a class of mostly cached reads needs.
//
// A cap of 0 ("never queue") leaves the door open: every queue holds 0 or
// more, so the door would refuse every request, even on an idle pool. The
// pool refuses exactly the callers that would have to wait.
func Shed(q Queue, maxWaiting int64, onShed func(*gin.Context)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if maxWaiting > 0 && q.Queued() >= maxWaiting {
			if onShed != nil {
				onShed(c)
			}
			Refuse(c, statusUnavailable, "overloaded, retry later", q.DrainEstimate())
			return
		}
		c.Next()
	}
}

// Limit caps the requests of one route class in flight at once (a
// bulkhead): the next one is refused at once with 503 instead of queueing.
//
// Its Retry-After is the average time a request holds a slot: with every
// slot busy, the first one frees within about that long.
//
// The count is one atomic integer, not a channel of slots: a channel send
// and receive take its lock on every request of the class. The hold time
// is timed on one request in holdSample: an average needs no more, and the
// two clock reads were a cost of every request.
func Limit(n int, onRefused func(*gin.Context)) gin.HandlerFunc {
	var (
		inFlight, seen atomic.Int64
		hold           ewma
	)
	limit := int64(n)
	return func(c *gin.Context) {
		if inFlight.Add(1) > limit {
			inFlight.Add(-1)
			if onRefused != nil {
				onRefused(c)
			}
			Refuse(c, statusUnavailable, "too many concurrent requests, retry later", max(hold.get(), time.Second))
			return
		}
		defer inFlight.Add(-1) // a panicking handler frees its slot too
		if seen.Add(1)%holdSample != 1 {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		hold.add(time.Since(start))
	}
}

// holdSample is how many requests Limit lets through per one it times.
const holdSample = 8

// ewma is a lock-free exponentially weighted moving average of durations
// (weight 1/8): recent requests count most, one outlier little.
type ewma struct{ nanos atomic.Int64 }

func (e *ewma) get() time.Duration { return time.Duration(e.nanos.Load()) }

func (e *ewma) add(d time.Duration) {
	for {
		old := e.nanos.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/8
		}
		if e.nanos.CompareAndSwap(old, next) {
			return
		}
	}
}
