package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestBurstRefusedBeforeTheLock is the lab's refusal scenario, counted: a
// burst of cold reads of distinct products while both connections of the
// main pool are blocked (the products table locked) and 4 reads may queue.
// Only the pool and its queue may take a Redis lock; every other read is
// refused after its one Redis GET, at the pool's door, without its lock,
// double-check, unlock and fill signal. Before misses claimed their places
// (db/claim.go) nearly every read of a burst took its lock, because each
// asked the gate while it was still empty.
func TestBurstRefusedBeforeTheLock(t *testing.T) {
	t.Parallel()
	const burst, admitted = 60, 2 + 4 // DB_MAIN_MAX_CONNS + SHED_MAX_WAITING
	env := overloadEnv(t)
	base, _ := startAppFilterLoaded(t, env)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the table is released (cleanups run last first)
	_, release := lockTable(t, env["DATABASE_URL"], "products")

	answers := make([]answer, burst)
	answered := make(chan struct{}, burst)
	start := make(chan struct{})
	for i := range burst {
		wg.Go(func() {
			<-start
			answers[i] = timedGet(fmt.Sprintf("%s/products/%d", base, 700+i))
			answered <- struct{}{}
		})
	}
	close(start)
	// All but the admitted answer while the table is still locked.
	for n := range burst - admitted {
		select {
		case <-answered:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d reads answered within 30 s while the pool was blocked, want %d", n, burst, burst-admitted)
		}
	}
	locks := scrape(t, base)[`stampede_lock_events_total{event="acquired"}`]
	release()
	wg.Wait()

	if locks > admitted {
		t.Errorf("%v Redis locks taken by a burst of %d cold reads, want at most %d (the pool and its queue): the others paid the lock path before their refusal",
			locks, burst, admitted)
	}
	got := map[int]int{}
	for _, a := range answers {
		got[a.status]++
	}
	if got[http.StatusServiceUnavailable] < burst-admitted {
		t.Errorf("statuses %v: want at least %d refused", got, burst-admitted)
	}
}
