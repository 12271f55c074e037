package db

import "context"

// A request's class at the pool's door: its priority and queue cap, set by
// its route class and read by the gate (admission.go).

// Priority is a request's class at the pool's door: it decides how much of
// its remaining deadline it may spend queueing, and whether it may use the
// connections kept for checkout.
type Priority int

const (
	// Normal work (product reads, lists) may queue for half of what is
	// left of its deadline. It is the zero value: unmarked work is normal.
	Normal Priority = iota
	// Critical work (checkout, writes) may queue for all of it and, while
	// connections are reserved, is served before every queued read.
	Critical
	// Low work (reports) may queue for a quarter of it.
	Low
)

// share is the part of a request's remaining deadline it may spend waiting
// for a connection: priorities are shares of one target, not queue lengths
// to tune.
func (p Priority) share() float64 {
	switch p {
	case Critical:
		return 1
	case Low:
		return 0.25
	}
	return 0.5
}

// Admission is what refuses a caller at the pool's door (ADMISSION).
type Admission string

const (
	// AdmitQueue: only the queue cap of the caller's Class refuses. It is
	// what the zero value means.
	AdmitQueue Admission = "queue"
	// AdmitDeadline: also a caller whose predicted queue wait does not fit
	// its share of its remaining deadline (Priority).
	AdmitDeadline Admission = "deadline"
)

// Class is what a request's route class asks of the pool's door: its
// priority and the longest queue it may join. Lower priorities carry a
// smaller cap, so under overload they are refused first, each at the
// moment it would need a connection: a read served from the cache is never
// refused. A route class builds one at start and marks each request with
// it (WithClass): one context value, and no allocation but that value's,
// on a path that mostly never reaches the pool.
type Class struct {
	Priority Priority
	// MaxWaiting applies only when Capped.
	MaxWaiting int64
	Capped     bool
}

type classKey struct{}

// WithClass marks ctx with c, which must not change afterwards (it is
// shared by every request of the class).
func WithClass(ctx context.Context, c *Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

func classOf(ctx context.Context) Class {
	if c, _ := ctx.Value(classKey{}).(*Class); c != nil {
		return *c
	}
	return Class{}
}

func priorityOf(ctx context.Context) Priority { return classOf(ctx).Priority }

func maxWaiting(ctx context.Context) (int64, bool) {
	c := classOf(ctx)
	return c.MaxWaiting, c.Capped
}
