package middleware

import (
	"net/http"
	"strconv"
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
// carved from slabs shared by many requests.
type rateHeaders struct {
	limits  []formatted // one per limiter of the middleware
	numbers valueSlabs
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
	h["X-Ratelimit-Reset"] = r.numbers.value(lctx.Reset)
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
// one allocation per slab, not per value. A request claims a slot of the
// current slab with one atomic add and writes its text there, once; the
// strings made over the slots stay immutable, and a response that keeps
// one keeps its slab alive, no more. (A sync.Pool of slabs would do too,
// but the race detector's Pool drops items at random, and a test that
// counts allocations must hold under -race.)
type valueSlabs struct {
	cur atomic.Pointer[valueSlab]
}

const (
	slabValues = 128
	maxDigits  = len("-9223372036854775808")
)

type valueSlab struct {
	next atomic.Int64
	text [slabValues * maxDigits]byte
	vals [slabValues]string
}

// value returns n as a header value (a slice of capacity 1, like the
// limits').
func (p *valueSlabs) value(n int64) []string {
	for {
		s := p.cur.Load()
		if s != nil {
			if i := s.next.Add(1) - 1; i < slabValues {
				slot := s.text[i*int64(maxDigits) : i*int64(maxDigits) : (i+1)*int64(maxDigits)]
				text := strconv.AppendInt(slot, n, 10) // fits its slot: never moves
				// #nosec G103 -- the slot is written once, by this request only, before its string exists, and never again
				s.vals[i] = unsafe.String(unsafe.SliceData(text), len(text))
				return s.vals[i : i+1 : i+1]
			}
		}
		p.cur.CompareAndSwap(s, &valueSlab{}) // spent out: the next slab
	}
}
