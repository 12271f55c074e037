package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// lockTTL is experiment 2: a lock TTL shorter than the query, with and
// without the watchdog that extends it.
func (l *Lab) lockTTL(ctx context.Context) *Experiment {
	n, per := l.instances, l.perInstance
	light := max(1, per/10)
	x := &Experiment{Name: "lock-ttl", Title: "lock TTL shorter than the query, with and without the watchdog",
		Setup: fmt.Sprintf("%d instances, concurrent GET /products/1 on a cold key, CACHE_MODE=lock, LOCK_TTL=100ms, %s on the DB link "+
			"(the query outlives the lock; link time is not statement time, so DB_STATEMENT_TIMEOUT=50ms < LOCK_TTL passes the "+
			"config check), DB_ACQUIRE_TIMEOUT=2s, REQUEST_TIMEOUT=5s, LOCK_WAIT=2s; a light burst (%d per instance) isolates the "+
			"lock, the full burst (%d per instance) shows the watchdog on a CPU-starved machine", n, l.delay, light, per),
		Expect: "without the watchdog the lock expires mid-query and another holder queries too (a plain SET, unfenced, would give 2 " +
			"with unfenced writes); with it, 1 query",
		Columns: []string{"watchdog", "burst", "DB queries", "ok", "failed", "p50", "p99", "locks lost", "extensions", "value cached", "lock keys left"}}
	rows := []struct {
		watchdog string
		per      int
	}{{"false", light}, {"true", light}, {"true", per}}
	queries := map[int]int64{}
	for i, row := range rows {
		env := map[string]string{"CACHE_MODE": "lock", "LOCK_TTL": "100ms", "LOCK_WATCHDOG": row.watchdog, "LOCK_WAIT": "2s",
			"DB_STATEMENT_TIMEOUT": "50ms", "DB_ACQUIRE_TIMEOUT": "2s", "REQUEST_TIMEOUT": "5s"}
		burst := fmt.Sprintf("%d×%d", n, row.per)
		r, err := l.row(ctx, x, "watchdog "+row.watchdog+" "+burst, n, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				return Burst(ctx, spread(c.Bases(), n*row.per, samePath("/products/1")))
			})
			keys, err := l.lockKeys(ctx)
			r.Figures["lock_keys_left"] = float64(keys)
			cached, err2 := l.rdb.Exists(ctx, "product:v1:{1}").Result()
			r.Values["value_cached"] = yesNo(cached == 1)
			return errors.Join(err, err2)
		})
		if p := r.phase("burst"); p != nil {
			b := p.Load
			queries[i] = r.DBQueries
			lost := r.App[`stampede_lock_events_total{event="lost_during_load"}`]
			x.Table = append(x.Table, []string{row.watchdog, burst, itoa(r.DBQueries), itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
				fnum(lost), fnum(r.App["stampede_lock_watchdog_extensions_total"]), r.Values["value_cached"], fnum(r.Figures["lock_keys_left"])})
			x.check(b.OK == b.Requests, "watchdog %s, %s: %d/%d requests ok", row.watchdog, burst, b.OK, b.Requests)
			if row.watchdog == "false" && r.Values["value_cached"] == "no" && lost == float64(r.DBQueries) {
				x.note("without the watchdog every holder's fenced write was refused (its lock had expired), so the value was "+
					"never stored and each of the %d instances' waiters took the expired lock in turn: %d queries, not the "+
					"2 of an unfenced SET (which would store the first value)", n, r.DBQueries)
			}
			if i == 2 && r.DBQueries > 1 {
				x.note("under the full %s burst the watchdog lost its lock %s time(s) (%d queries): its first extension, "+
					"due 50 ms after the lock was taken, arrived after the 100 ms expiry while the instances were CPU-starved",
					burst, fnum(lost), r.DBQueries)
			}
		}
		if err != nil {
			return x.fail(err)
		}
	}
	x.check(queries[0] >= 2, "without the watchdog the expired lock lets another holder query: %d queries (want ≥ 2)", queries[0])
	x.check(queries[1] == 1, "with the watchdog: %d query (want 1)", queries[1])
	return x
}
