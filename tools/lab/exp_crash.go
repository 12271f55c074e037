package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// holderCrash is the crashed lock holder: the instance that took a cold
// key's lock dies with SIGKILL mid-load on a slow database link; the other
// instances' waiters must outlive its lock, take it over and answer.
func (l *Lab) holderCrash(ctx context.Context) *Experiment {
	const n, requests = 3, 100
	x := &Experiment{Name: "holder-crash", Title: "the lock holder is killed mid-load",
		Setup: fmt.Sprintf("%d instances, CACHE_MODE=swr, LOCK_TTL=2s, LOCK_WAIT=6s, REQUEST_TIMEOUT=8s, DB_STATEMENT_TIMEOUT=1900ms, "+
			"+1.5s on the DB link; instance 0 takes the lock of a cold key (GET /products/7) and is killed with SIGKILL; "+
			"then %d concurrent GETs of that key on the other instances", n, requests),
		Expect: "on main before the fix, 0/100 answered (all 504 after 3.9 s: the shared load's deadline also covered the " +
			"wait for the lock); now ≥ 95 % answer 200 within REQUEST_TIMEOUT, ≤ 2 queries, no lock key left",
		Columns: []string{"LOCK_WAITER", "ok", "failed", "p50", "p99", "DB queries", "lock keys left"}}
	for _, waiter := range []string{"wait", "load"} {
		env := map[string]string{"CACHE_MODE": "swr", "LOCK_TTL": "2s", "LOCK_WAIT": "6s", "REQUEST_TIMEOUT": "8s",
			"DB_STATEMENT_TIMEOUT": "1900ms", "LOCK_WAITER": waiter}
		r, err := l.row(ctx, x, "waiter "+waiter, n, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(1500 * time.Millisecond)
			defer l.dbProxy.SetDelay(0)
			holder := c.Instances[0]
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, holder.Base+"/products/7", nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			deadline := time.Now().Add(5 * time.Second)
			for l.rdb.Exists(ctx, "lock:product:v1:{7}").Val() == 0 {
				if time.Now().After(deadline) {
					return fmt.Errorf("instance 0 never took the lock")
				}
				time.Sleep(5 * time.Millisecond)
			}
			holder.Kill()
			others := c.Bases()[1:]
			l.phase(r, "waiters", func() ([]Result, time.Duration) {
				return Burst(ctx, spread(others, requests, samePath("/products/7")))
			})
			keys, err := l.lockKeys(ctx)
			r.Figures["lock_keys_left"] = float64(keys)
			return err
		})
		if p := r.phase("waiters"); p != nil {
			b := p.Load
			x.Table = append(x.Table, []string{waiter, itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
				itoa(r.DBQueries), fnum(r.Figures["lock_keys_left"])})
			x.check(b.OK*100 >= b.Requests*95, "LOCK_WAITER=%s: %d/%d answered (want ≥ 95 %%)", waiter, b.OK, b.Requests)
			x.check(r.DBQueries <= 2, "LOCK_WAITER=%s: %d queries (want ≤ 2)", waiter, r.DBQueries)
			x.check(r.Figures["lock_keys_left"] == 0, "LOCK_WAITER=%s: no lock key left", waiter)
		}
		if err != nil {
			return x.fail(err)
		}
	}
	return x
}
