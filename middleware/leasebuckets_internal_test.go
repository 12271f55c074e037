package middleware

import (
	"strconv"
	"testing"
	"time"
)

// TestLeaseBucketsBounded: the buckets never pass max however many
// clients come (one per made-up address, say), and a sweep drops the
// buckets whose lease has lapsed before any that still hold tokens.
func TestLeaseBucketsBounded(t *testing.T) {
	const maxClients = 100
	live := &lease{until: time.Now().Add(time.Hour).UnixNano()}
	lapsed := &lease{until: time.Now().Add(-time.Second).UnixNano()}
	bs := leaseBuckets{max: maxClients}
	for i := range maxClients {
		l := lapsed
		if i%2 == 0 {
			l = live
		}
		bs.get("seen" + strconv.Itoa(i)).cur.Store(l)
	}
	bs.get("one more") // past max: the lapsed half goes
	for i := range maxClients {
		_, kept := bs.m.Load("seen" + strconv.Itoa(i))
		if want := i%2 == 0; kept != want {
			t.Errorf("bucket %d (live %v): kept %v, want %v", i, want, kept, want)
		}
	}
	for i := range 10 * maxClients {
		bs.get("flood" + strconv.Itoa(i))
	}
	n := 0
	bs.m.Range(func(any, any) bool { n++; return true })
	if n > maxClients || int64(n) != bs.n.Load() {
		t.Errorf("%d buckets kept (counted %d), want at most %d", n, bs.n.Load(), maxClients)
	}
}
