package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestMetricsAfterStampede: two instances take a stampede on one cold key
// whose query is held slow (the products table locked by the test); their
// /metrics then show the one load, the single-flight shared waits and the
// lock contention it caused.
func TestMetricsAfterStampede(t *testing.T) {
	t.Parallel()
	const perInstance = 40
	id := productID(t)
	env := testEnv(t)
	env["CACHE_MODE"] = "lock"
	env["LOCK_WAIT"] = "4s"
	bases := []string{}
	for range 2 {
		base, _ := startAppFilterLoaded(t, env)
		bases = append(bases, base)
	}

	_, release := lockTable(t, env["DATABASE_URL"], "products")
	var wg sync.WaitGroup
	statuses := make(chan int, 2*perInstance)
	for _, base := range bases {
		for range perInstance {
			wg.Go(func() {
				resp, _, err := send("GET", fmt.Sprintf("%s/products/%d", base, id), nil, "")
				if err != nil {
					statuses <- 0
					return
				}
				statuses <- resp.StatusCode
			})
		}
	}
	// Release the slow query only once the pile-up is visible: the other
	// instance contending for the lock (a fixed sleep is a race on a busy
	// machine).
	deadline := time.Now().Add(15 * time.Second)
	for contendedNow(t, bases) < 1 {
		if time.Now().After(deadline) {
			release()
			t.Fatal("no lock contention within 15s: the second instance never waited")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let late requests join the flights
	release()
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Fatalf("a stampede request got %d, want 200", s)
		}
	}

	var loads, shared, contended float64
	for _, base := range bases {
		m := scrape(t, base)
		loads += m["stampede_cache_loads_total"]
		shared += m["stampede_singleflight_shared_total"]
		contended += m[`stampede_lock_events_total{event="contended"}`]
	}
	if loads != 1 {
		t.Errorf("stampede_cache_loads_total over both instances: got %v, want 1", loads)
	}
	if shared < 2 {
		t.Errorf("stampede_singleflight_shared_total: got %v, want ≥ 2 (callers that joined a load on each instance)", shared)
	}
	if contended < 1 {
		t.Errorf(`stampede_lock_events_total{event="contended"}: got %v, want ≥ 1 (the other instance waited on the lock)`, contended)
	}
}

func contendedNow(t *testing.T, bases []string) float64 {
	var n float64
	for _, base := range bases {
		n += scrape(t, base)[`stampede_lock_events_total{event="contended"}`]
	}
	return n
}
