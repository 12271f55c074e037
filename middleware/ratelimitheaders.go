package middleware

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	limiter "github.com/ulule/limiter/v3"
)

// rateHeaders writes X-RateLimit-* on every counted request without
// allocating for each: strconv.FormatInt and a []string per header were
// six allocations a request, as many as the rest of the limiter's work.
// The limits are known when the middleware is built, so they are formatted
// once; the reset and the remaining count differ from client to client
// (each client's window starts with its first request), so their text is
// carved from slabs shared by many requests, and a reset that repeats (a
// hot client's, for its whole window) is handed out again.
type rateHeaders struct {
	limits  []formatted // one per limiter of the middleware
	numbers valueSlabs
	resets  recentValue
}

// formatted is a number and its header value.
type formatted struct {
	n int64
	v []string
}

// newRateHeaders formats the limits of the limiters (nil ones skipped).
// Each value's slice is shared by every response that carries it: its
// capacity is 1, so an Add to it copies, never writes into it.
func newRateHeaders(ls ...*limiter.Limiter) *rateHeaders {
	r := &rateHeaders{}
	for _, l := range ls {
		if l != nil {
			r.limits = append(r.limits, formatted{n: l.Rate.Limit, v: []string{strconv.FormatInt(l.Rate.Limit, 10)}})
		}
	}
	return r
}

// set writes the three headers of lctx into h. Canonical keys are set
// directly: Header.Set would re-spell each one, allocating. The wire form
// is the same.
func (r *rateHeaders) set(h http.Header, lctx limiter.Context) {
	h["X-Ratelimit-Limit"] = r.limit(lctx.Limit)
	h["X-Ratelimit-Remaining"] = r.numbers.value(lctx.Remaining)
	h["X-Ratelimit-Reset"] = r.resets.value(lctx.Reset)
}

func (r *rateHeaders) limit(n int64) []string {
	for _, f := range r.limits {
		if f.n == n {
			return f.v
		}
	}
	return r.numbers.value(n)
}

// valueSlabs hands out header values from slabs of slabValues numbers:
// one allocation per slab, not per value. Each core carves values from a
// slab of its own, lent by a sync.Pool (its per-P cache): a request takes
// the slab, writes its text in the next slot, once, and gives the slab
// back until it is full. A slab shared by both cores cost more than the
// rest of the limiter: every claim moved the slab's counter from one
// core's cache to the other's, and a full slab made the other core spin
// until its successor was there. The strings made over the slots stay
// immutable, and a response that keeps one keeps its slab alive, no more.
// (The race detector's Pool drops a quarter of what is given back, so
// under -race slabs are made more often; still far fewer than values.)
type valueSlabs struct {
	pool sync.Pool // *valueSlab with free slots
}

const (
	slabValues = 128
	maxDigits  = len("-9223372036854775808")
)

type valueSlab struct {
	next int // owned by whoever holds the slab: no atomics
	text [slabValues * maxDigits]byte
	vals [slabValues]slabValue
}

// slabValue is a header value and the number it spells.
type slabValue struct {
	s string
	n int64
}

// value returns n as a header value (a slice of capacity 1, like the
// limits').
func (p *valueSlabs) value(n int64) []string {
	return p.entry(n).header()
}

// entry writes n into a fresh slot and returns it.
func (p *valueSlabs) entry(n int64) *slabValue {
	s, _ := p.pool.Get().(*valueSlab)
	if s == nil {
		s = new(valueSlab)
	}
	i := s.next
	s.next++
	slot := s.text[i*maxDigits : i*maxDigits : (i+1)*maxDigits]
	text := strconv.AppendInt(slot, n, 10) // fits its slot: never moves
	// #nosec G103 -- the slot is written once, by the slab's only holder, before its string exists, and never again
	s.vals[i] = slabValue{s: unsafe.String(unsafe.SliceData(text), len(text)), n: n}
	if s.next < slabValues {
		p.pool.Put(s) // a full slab is dropped: its values live on in the answers that hold them
	}
	return &s.vals[i]
}

// header is the value as a header's []string of length and capacity 1:
// an Add to it copies, never writes into the slab.
func (v *slabValue) header() []string {
	return unsafe.Slice(&v.s, 1) // #nosec G103 -- one string of the slab, immutable once its slot is written
}

// recentValue is valueSlabs for a number that repeats: the reset of a hot
// client's window is the same on every request of the window, so the last
// value written is handed out again. Requests then only read the value's
// cache line, where each claim of a slot took the slab counter's line from
// the other core. Clients whose windows end at different seconds, taking
// turns, miss every time; a miss costs one store more than a slot alone
// (about 60 ns with 50 resets taking turns on two cores, where a hit saves
// about 95), and allocates nothing either.
type recentValue struct {
	last  atomic.Pointer[slabValue] // the last value written, in slabs
	slabs valueSlabs
}

func (r *recentValue) value(n int64) []string {
	if l := r.last.Load(); l != nil && l.n == n {
		return l.header()
	}
	v := r.slabs.entry(n)
	r.last.Store(v)
	return v.header()
}
