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
	cases := []struct {
		name     string
		newcomer int  // clients added after max clients, half of them live
		lapsedGo bool // want every lapsed bucket of the first max gone, every live one kept
	}{
		{"one past max: the lapsed go first", 1, true},
		{"a flood of new clients: bounded", 10 * maxClients, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bs := leaseBuckets{max: maxClients}
			for i := range maxClients {
				l := lapsed
				if i%2 == 0 {
					l = live
				}
				bs.get("seen" + strconv.Itoa(i)).cur.Store(l)
			}
			for i := range tc.newcomer {
				bs.get("new" + strconv.Itoa(i))
			}
			if tc.lapsedGo {
				for i := range maxClients {
					_, kept := bs.m.Load("seen" + strconv.Itoa(i))
					if want := i%2 == 0; kept != want {
						t.Errorf("bucket %d (live %v): kept %v, want %v", i, want, kept, want)
					}
				}
			}
			n := 0
			bs.m.Range(func(any, any) bool { n++; return true })
			if n > maxClients || int64(n) != bs.n.Load() {
				t.Errorf("%d buckets kept (counted %d), want at most %d", n, bs.n.Load(), maxClients)
			}
		})
	}
}
