package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// overloadEnv: a main pool of 2, a reports pool of 1, normal reads shed at 4
// waiters (checkout at 8, reports at 1), and nothing else in the way: no
// connection kept for checkout, so reads can hold both (the cap is what
// these tests are about: ADMISSION=queue; db/admission_test.go covers the
// reservation and deadline admission).
func overloadEnv(t *testing.T) map[string]string {
	return testEnv(t, map[string]string{
		"DB_MAIN_MAX_CONNS": "2", "DB_REPORTS_MAX_CONNS": "1", "SHED_MAX_WAITING": "4", "DB_CHECKOUT_RESERVED": "0", "ADMISSION": "queue",
		"DB_ACQUIRE_TIMEOUT": "2s", "DB_STATEMENT_TIMEOUT": "3s",
		"RATE_LIMIT": "off", "CACHE_MODE": "lock",
	})
}

// tally counts statuses and checks that every 503 was fast and says when to
// come back: shedding must free the caller at once, not after a queue.
func tally(t *testing.T, answers []answer) map[int]int {
	t.Helper()
	got := map[int]int{}
	for i, a := range answers {
		if a.err != nil {
			t.Errorf("request %d: %v", i, a.err)
			continue
		}
		got[a.status]++
		if a.status != http.StatusServiceUnavailable {
			continue
		}
		if a.elapsed >= time.Second {
			t.Errorf("request %d: 503 after %s, want < 1s (shed before queueing)", i, a.elapsed)
		}
		if a.header.Get("Retry-After") == "" {
			t.Errorf("request %d: 503 without Retry-After", i)
		}
	}
	return got
}

// TestOverloadShedsReadsAdmitsCheckout saturates the main pool with real
// slow queries (the products table is locked, so the app's SELECTs wait on
// the server): 2 requests hold the connections, 4 may queue, the rest are
// shed at once — while checkout, allowed a queue twice as long, still gets
// in and succeeds when the database frees up.
func TestOverloadShedsReadsAdmitsCheckout(t *testing.T) {
	t.Parallel()
	env := overloadEnv(t)
	ids := []int64{601, 602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613}
	base, _ := startAppFilterLoaded(t, env)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the lock is released (cleanups run last first)
	conn, release := lockTable(t, env["DATABASE_URL"], "products")

	answers := make([]answer, 12)
	fire := func(i int) {
		wg.Go(func() { answers[i] = timedGet(fmt.Sprintf("%s/products/%d", base, ids[i])) })
	}
	fire(0)
	fire(1)
	waitLockWaiters(t, conn, "main", 2) // both connections are held by blocked queries
	for i := 2; i < len(answers); i++ {
		fire(i) // staggered, so the queue grows one waiter at a time
		time.Sleep(20 * time.Millisecond)
	}
	// Every read has reached the pool before the order does: on a loaded
	// machine a read's Redis round trips once took longer than the
	// stagger, the order joined the queue first, and only 3 reads fitted
	// behind it (the cap counts every waiter).
	eventually(t, 10*time.Second, "4 reads queued for the main pool", func() (bool, string) {
		n := scrape(t, base)[`stampede_db_pool_waiting{pool="main"}`]
		return n == 4, fmt.Sprintf("%v waiting", n)
	})

	// The pool is saturated and its queue full for normal reads: checkout
	// is admitted and waits for a connection.
	order := make(chan answer, 1)
	go func() {
		start := time.Now()
		resp, _, err := send(http.MethodPost, base+"/orders", nil, `{"product_id":620,"quantity":1}`)
		a := answer{elapsed: time.Since(start), err: err}
		if err == nil {
			a.status = resp.StatusCode
		}
		order <- a
	}()
	time.Sleep(100 * time.Millisecond)
	if a := timedGet(fmt.Sprintf("%s/products/%d", base, ids[12])); a.status != http.StatusServiceUnavailable || a.elapsed >= time.Second {
		t.Errorf("normal read beside the queued order: got %d after %s (%v), want 503 in < 1s", a.status, a.elapsed, a.err)
	}
	select {
	case a := <-order:
		t.Fatalf("order answered %d after %s while the pool was saturated, want it queued", a.status, a.elapsed)
	case <-time.After(400 * time.Millisecond):
	}
	release()

	select {
	case a := <-order:
		if a.err != nil || a.status != http.StatusCreated {
			t.Errorf("order after release: got %d (%v), want 201", a.status, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("order: no answer within 10s of the release")
	}
	wg.Wait()
	got := tally(t, answers)
	if want := map[int]int{200: 6, 503: 6}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses of %d reads: got %v, want %v (2 holding + 4 queued served, the rest shed)", len(answers), got, want)
	}
}

// TestOverloadReportsShedCachedReadsServed floods the reports pool (1
// connection, shed at 1 waiter) with reports blocked on a locked orders
// table: most are shed at once, and product reads served from the cache are
// untouched by the flood — the bulkhead holds.
func TestOverloadReportsShedCachedReadsServed(t *testing.T) {
	t.Parallel()
	env := overloadEnv(t)
	const cached = 630
	base, _ := startApp(t, env)
	url := fmt.Sprintf("%s/products/%d", base, cached)
	for _, want := range []string{"MISS", "HIT"} {
		if a := timedGet(url); a.status != http.StatusOK || a.header.Get("X-Cache") != want {
			t.Fatalf("warm-up GET: got %d X-Cache %q (%v), want 200 %s", a.status, a.header.Get("X-Cache"), a.err, want)
		}
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	conn, release := lockTable(t, env["DATABASE_URL"], "orders")

	answers := make([]answer, 10)
	fire := func(i int) { wg.Go(func() { answers[i] = timedGet(base + "/reports/top-products") }) }
	fire(0)
	waitLockWaiters(t, conn, "reports", 1) // the one connection is held
	for i := 1; i < len(answers); i++ {
		fire(i)
		time.Sleep(20 * time.Millisecond)
	}

	for i := range 3 {
		a := timedGet(url)
		if a.status != http.StatusOK || a.header.Get("X-Cache") != "HIT" || a.elapsed >= time.Second {
			t.Errorf("cached read %d during the flood: got %d X-Cache %q after %s (%v), want 200 HIT in < 1s",
				i, a.status, a.header.Get("X-Cache"), a.elapsed, a.err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	release()
	wg.Wait()
	got := tally(t, answers)
	if want := map[int]int{200: 2, 503: 8}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses of %d reports: got %v, want %v (1 holding + 1 queued served, the rest shed)", len(answers), got, want)
	}
	for i, a := range answers {
		if a.status == http.StatusServiceUnavailable && !strings.Contains(a.header.Get("Content-Type"), "json") {
			t.Errorf("report %d: 503 Content-Type %q, want JSON", i, a.header.Get("Content-Type"))
		}
	}
}
