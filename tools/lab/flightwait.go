package main

import (
	"sync"
	"time"
)

// flightWait is a perfect single-flight with no I/O: the first request for
// a key starts one "load" of exactly d, and every request for that key
// that arrives before it ends is answered the moment it ends. The
// cold-key experiment serves it from bare gin handlers as the floor of its
// burst: what any stampede guard, however good, costs on this machine and
// this client, so that the service is judged on what it adds above it.
type flightWait struct {
	d     time.Duration
	mu    sync.Mutex
	loads map[string]chan struct{}
}

func newFlightWait(d time.Duration) *flightWait {
	return &flightWait{d: d, loads: map[string]chan struct{}{}}
}

// wait blocks until key's current load ends, starting one if none runs;
// with d = 0 it returns at once.
func (f *flightWait) wait(key string) {
	if f.d <= 0 {
		return
	}
	f.mu.Lock()
	done, ok := f.loads[key]
	if !ok {
		done = make(chan struct{})
		f.loads[key] = done
		time.AfterFunc(f.d, func() {
			f.mu.Lock()
			delete(f.loads, key) // the next burst starts a load of its own
			f.mu.Unlock()
			close(done)
		})
	}
	f.mu.Unlock()
	<-done
}
