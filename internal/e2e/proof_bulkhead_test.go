package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// slowReports makes every top-products report of the database at url take
// d on the server, whichever pool runs it: the report's
// make_interval(days => $1) resolves to an IMMUTABLE public.make_interval
// that sleeps (search_path puts public before pg_catalog, and custom plans
// fold it once per query), while no other query of the app calls it. Call
// before the app starts: new sessions pick the settings up.
func slowReports(t *testing.T, url string, d time.Duration) {
	t.Helper()
	conn := dbConn(t, url)
	ctx := context.Background()
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	db := pgx.Identifier{name}.Sanitize()
	for _, sql := range []string{
		"ALTER DATABASE " + db + " SET search_path = public, pg_catalog",
		"ALTER DATABASE " + db + " SET plan_cache_mode = force_custom_plan",
		fmt.Sprintf(`CREATE FUNCTION public.make_interval(days integer) RETURNS interval
			LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_sleep(%g); RETURN pg_catalog.make_interval(days => days); END $$`, d.Seconds()),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// TestBulkheadReportsCannotStarveCheckout: reports take 2.5 s each on the
// server and eight clients keep asking for them, so the reports pool (one
// connection) is saturated for the whole test. Meanwhile 200 uncached
// product reads (each a query on the main pool) and 100 checkouts must
// still succeed (≥ 99 %), 90 % of them in under half a report's time: the
// reports' pool is a bulkhead, and its flood never reaches the main pool.
// (Cached reads never touch PostgreSQL, so they prove nothing here.)
func TestBulkheadReportsCannotStarveCheckout(t *testing.T) {
	t.Parallel()
	const reportTime = 2500 * time.Millisecond
	env := testEnv(t, map[string]string{
		"DB_MAIN_MAX_CONNS": "4", "DB_REPORTS_MAX_CONNS": "1",
		"DB_ACQUIRE_TIMEOUT": "2s", "DB_STATEMENT_TIMEOUT": "4s",
		"CACHE_MODE": "lock", "UNKNOWN_ID_FILTER": "false",
	})
	slowReports(t, env["DATABASE_URL"], reportTime)
	base, _ := startApp(t, env)

	flood := startReportFlood(t, base)
	// A report is running (on whichever pool runs reports) before the
	// critical work starts.
	watch := dbConn(t, env["DATABASE_URL"])
	eventually(t, 10*time.Second, "a report running on the server", func() (bool, string) {
		n := scalar(t, watch, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
			AND query LIKE '%make_interval(days%'`)
		return n > 0, fmt.Sprintf("%d active report sessions", n)
	})

	jobs := criticalJobs()
	took, failed := runJobs(base, jobs)
	flood.end()

	var bad []string
	for i, f := range failed {
		if f != "" {
			bad = append(bad, fmt.Sprintf("%s %s: %s", jobs[i].method, jobs[i].path, f))
		}
	}
	slices.Sort(took)
	p50, p90 := took[len(took)/2], took[len(took)*9/10]
	t.Logf("%d reads and checkouts beside the flood: %d failed, p50 %s, p90 %s, max %s; reports: %d ok (slowest %s), %d refused",
		len(jobs), len(bad), p50, p90, took[len(took)-1], flood.ok.Load(), time.Duration(flood.slowest.Load()), flood.refused.Load())
	if len(bad)*100 > len(jobs) {
		t.Errorf("%d of %d uncached reads and checkouts failed beside the reports flood, want ≤ 1 %%: %v", len(bad), len(jobs), bad[:min(len(bad), 5)])
	}
	if p90 >= reportTime/2 {
		t.Errorf("p90 of uncached reads and checkouts %s beside the reports flood, want under half a report's %s", p90, reportTime)
	}
	// The flood was real: reports were slow and the pool turned some away.
	if flood.ok.Load() == 0 || time.Duration(flood.slowest.Load()) < reportTime {
		t.Errorf("reports: %d answered, slowest %s; want some taking ≥ %s (the flood did not happen)", flood.ok.Load(), time.Duration(flood.slowest.Load()), reportTime)
	}
	if flood.refused.Load() == 0 {
		t.Errorf("no report was refused: the reports pool was never saturated")
	}
}

// reportFlood is 8 report clients asking in a loop until end.
type reportFlood struct {
	stop        chan struct{}
	wg          sync.WaitGroup
	ok, refused atomic.Int64
	slowest     atomic.Int64 // nanoseconds
	stopOnce    sync.Once
}

func startReportFlood(t *testing.T, base string) *reportFlood {
	f := &reportFlood{stop: make(chan struct{})}
	for range 8 {
		f.wg.Go(func() {
			for {
				select {
				case <-f.stop:
					return
				default:
				}
				a := timedGet(base + "/reports/top-products")
				switch {
				case a.err != nil:
				case a.status == http.StatusOK:
					f.ok.Add(1)
					if int64(a.elapsed) > f.slowest.Load() {
						f.slowest.Store(int64(a.elapsed))
					}
				case a.status == http.StatusServiceUnavailable:
					f.refused.Add(1)
					time.Sleep(50 * time.Millisecond) // a client honouring Retry-After would wait longer
				}
			}
		})
	}
	t.Cleanup(f.wg.Wait)
	t.Cleanup(func() { f.stopOnce.Do(func() { close(f.stop) }) })
	return f
}

// end stops the flood and waits for its clients.
func (f *reportFlood) end() {
	f.stopOnce.Do(func() { close(f.stop) })
	f.wg.Wait()
}

// bulkheadJob is one critical request and the status it wants.
type bulkheadJob struct {
	method, path, body string
	want               int
}

// criticalJobs are 200 uncached product reads and 100 checkouts.
func criticalJobs() []bulkheadJob {
	var jobs []bulkheadJob
	for i := range 200 {
		jobs = append(jobs, bulkheadJob{http.MethodGet, fmt.Sprintf("/products/%d", 101+i), "", http.StatusOK})
		if i%2 == 0 {
			jobs = append(jobs, bulkheadJob{http.MethodPost, "/orders", fmt.Sprintf(`{"product_id":%d,"quantity":1}`, 501+i/2), http.StatusCreated})
		}
	}
	return jobs
}

// runJobs sends jobs from 8 clients: how long each took, and how each
// failed ("" when it got its status).
func runJobs(base string, jobs []bulkheadJob) (took []time.Duration, failed []string) {
	took = make([]time.Duration, len(jobs))
	failed = make([]string, len(jobs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				j := jobs[i]
				start := time.Now()
				resp, _, err := send(j.method, base+j.path, nil, j.body)
				took[i] = time.Since(start)
				switch {
				case err != nil:
					failed[i] = err.Error()
				case resp.StatusCode != j.want:
					failed[i] = fmt.Sprintf("%d", resp.StatusCode)
				}
			}
		})
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	return took, failed
}
