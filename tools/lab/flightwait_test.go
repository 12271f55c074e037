package main

import (
	"sync"
	"testing"
	"time"
)

// TestFlightWaitIsOneSharedWait: the floor of the cold-key burst answers
// every concurrent request for a key when one wait of d ends (not d after
// each request's own arrival), other keys wait on their own, the next
// burst starts a wait of its own, and d = 0 answers at once.
func TestFlightWaitIsOneSharedWait(t *testing.T) {
	const d = 200 * time.Millisecond
	f := newFlightWait(d)
	start := time.Now()
	var wg sync.WaitGroup
	ends := make([]time.Duration, 40)
	for i := range ends {
		wg.Go(func() {
			if i >= 20 {
				time.Sleep(d * 4 / 5) // arrives while the first wait runs
			}
			f.wait("1")
			ends[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i, e := range ends {
		// Every request ends with the one wait that started first: none
		// before d, and the late half well before its own arrival + d
		// (1.8 d).
		if limit := d * 8 / 5; e < d || e >= limit {
			t.Fatalf("request %d answered after %s, want from %s to under %s (one shared wait)", i, e, d, limit)
		}
	}
	if n := len(f.loads); n != 0 {
		t.Fatalf("%d waits left behind after the burst", n)
	}
	again := time.Now()
	f.wait("1")
	if e := time.Since(again); e < d {
		t.Fatalf("the next burst waited %s, want a wait of its own (≥ %s)", e, d)
	}
	instant := time.Now()
	newFlightWait(0).wait("1")
	if e := time.Since(instant); e > d/2 {
		t.Fatalf("d = 0 waited %s", e)
	}
}
