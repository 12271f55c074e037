package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestNoQueueAtShedMaxWaitingZero: SHED_MAX_WAITING=0 means "never queue
// for a connection", not "never serve". On an idle pool a read, a report
// and an order are all served (the door of checkout and reports, and the
// pool's own step after the gate, once read a cap of 0 as "refuse
// everything"); with both connections held, every further cold read is
// refused at once instead of queueing.
func TestNoQueueAtShedMaxWaitingZero(t *testing.T) {
	t.Parallel()
	env := overloadEnv(t)
	env["SHED_MAX_WAITING"] = "0"
	base, _ := startAppFilterLoaded(t, env)

	idle := []struct {
		name, method, path, body string
		want                     int
	}{
		{"read", http.MethodGet, "/products/640", "", http.StatusOK},
		{"report", http.MethodGet, "/reports/top-products", "", http.StatusOK},
		{"order", http.MethodPost, "/orders", `{"product_id":641,"quantity":1}`, http.StatusCreated},
	}
	for _, tc := range idle {
		resp, body, err := send(tc.method, base+tc.path, nil, tc.body)
		if err != nil || resp.StatusCode != tc.want {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Errorf("%s on an idle pool: got %d %s (%v), want %d", tc.name, status, body, err, tc.want)
		}
	}

	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the table is released (cleanups run last first)
	conn, release := lockTable(t, env["DATABASE_URL"], "products")
	held := make([]answer, 2)
	for i := range held {
		wg.Go(func() { held[i] = timedGet(fmt.Sprintf("%s/products/%d", base, 650+i)) })
	}
	waitLockWaiters(t, conn, "main", 2) // both connections are held by blocked reads
	refused := make([]answer, 5)
	for i := range refused {
		refused[i] = timedGet(fmt.Sprintf("%s/products/%d", base, 660+i))
	}
	release()
	wg.Wait()
	if got := tally(t, refused); got[http.StatusServiceUnavailable] != len(refused) {
		t.Errorf("cold reads with both connections held: got %v, want all %d refused at once", got, len(refused))
	}
	for i, a := range held {
		if a.err != nil || a.status != http.StatusOK {
			t.Errorf("read %d holding a connection: got %d (%v), want 200 once the table is free", i, a.status, a.err)
		}
	}
}
