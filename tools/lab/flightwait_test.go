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
	waited := make([]time.Duration, 40) // from the request's own arrival
	for i := range ends {
		wg.Go(func() {
			if i >= 20 {
				time.Sleep(d * 4 / 5) // arrives while the first wait runs
			}
			arrived := time.Now()
			f.wait("1")
			ends[i], waited[i] = time.Since(start), time.Since(arrived)
		})
	}
	wg.Wait()
	for i := range ends {
		// Every request ends with the one wait that started first: none
		// before d, and the late half well before a wait of its own would
		// end (d after its arrival). Timed from each request's arrival, so
		// a starved machine that starts the goroutines late moves both.
		if ends[i] < d || i >= 20 && waited[i] >= d {
			t.Fatalf("request %d answered %s after the start, %s after its arrival, want from %s after the start and, arriving late, under %s after its arrival (one shared wait)",
				i, ends[i], waited[i], d, d)
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
