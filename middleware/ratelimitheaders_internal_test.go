package middleware

import (
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

// TestValueSlabsConcurrent: requests on both cores carving values from the
// slabs at once each get their own slot: every value still reads as its
// number once all are written (a slot claimed twice would show the other
// request's text), across many slabs.
func TestValueSlabsConcurrent(t *testing.T) {
	const writers, each = 8, 2000
	var slabs valueSlabs
	got := make([][][]string, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				got[w] = append(got[w], slabs.value(int64(w*each+i)))
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i, v := range got[w] {
			if want := strconv.Itoa(w*each + i); len(v) != 1 || cap(v) != 1 || v[0] != want {
				t.Fatalf("value %s: got %q (len %d, cap %d), want [%s] of capacity 1", want, v, len(v), cap(v), want)
			}
		}
	}
}

// TestRecentValueReused: a repeated number (a hot client's window reset)
// is handed out from the slot written for it, not a new one per request;
// a new number gets a new slot, and the old values stay as they were.
func TestRecentValueReused(t *testing.T) {
	var r recentValue
	tests := []struct {
		n       int64
		sameAs  int // index of an earlier call whose slot is reused; -1: a new slot
		wantVal string
	}{
		{1767225600, -1, "1767225600"},
		{1767225600, 0, "1767225600"},
		{1767225601, -1, "1767225601"},
		{1767225601, 2, "1767225601"},
		{-7, -1, "-7"},
	}
	var got [][]string
	for i, tc := range tests {
		v := r.value(tc.n)
		got = append(got, v)
		if len(v) != 1 || cap(v) != 1 || v[0] != tc.wantVal {
			t.Fatalf("call %d: got %q (len %d, cap %d), want [%s] of capacity 1", i, v, len(v), cap(v), tc.wantVal)
		}
		for j := range i {
			same := unsafe.SliceData(got[j]) == unsafe.SliceData(v)
			if want := j == tc.sameAs; same != want {
				t.Errorf("call %d shares call %d's slot: %v, want %v", i, j, same, want)
			}
		}
	}
	if got[0][0] != "1767225600" || got[2][0] != "1767225601" {
		t.Errorf("earlier values changed: %q, %q", got[0], got[2])
	}
}

// BenchmarkValueSlabs carves header values from many more goroutines than
// cores, as a busy server runs its requests: with one slab shared by every
// core, a request that filled the slab and was descheduled before making
// the next one left every other request spinning until it ran again
// (2.6–3.6 µs a value on two cores, against 66–79 ns from slabs lent per
// core; docs/benchmarks.md).
func BenchmarkValueSlabs(b *testing.B) {
	var slabs valueSlabs
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		for pb.Next() {
			n++
			_ = slabs.value(n)
		}
	})
}
