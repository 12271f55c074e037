package main

import (
	"context"
	"fmt"
	"time"
)

// overload is experiment 5: more work than the pool can take, with and
// without load shedding.
func (l *Lab) overload(ctx context.Context) *Experiment {
	per := l.perInstance
	const key = `stampede_db_pool_waiting{pool="main"}`
	x := &Experiment{Name: "overload", Title: "more work than the pool can take: load shedding vs queueing",
		Setup: fmt.Sprintf("1 instance, DB_MAIN_MAX_CONNS=2, %s on the DB link, %d concurrent GETs of %d different uncached ids; "+
			"DB_ACQUIRE_TIMEOUT=2s; %s scraped every 20 ms", l.delay, per, per, key),
		Expect:  "without shedding the pool queue grows to nearly every request and most fail after the 2 s acquire timeout; with SHED_MAX_WAITING=4 the queue stays at 4 and the excess gets 503 + Retry-After at once",
		Columns: []string{"shedding", "ok", "503 with Retry-After", "other failures", "p50", "p99", "failures' p99", "peak pool waiters", "DB queries"}}
	peaks, failP99 := map[string]float64{}, map[string]float64{}
	for _, limit := range []string{"100000", "4"} {
		label := "off (SHED_MAX_WAITING=100000)"
		if limit == "4" {
			label = "on (SHED_MAX_WAITING=4)"
		}
		// The fixed queue alone (ADMISSION=queue): the admission experiment
		// compares it with deadline admission.
		env := map[string]string{"DB_MAIN_MAX_CONNS": "2", "SHED_MAX_WAITING": limit, "ADMISSION": "queue"}
		r, err := l.row(ctx, x, label, 1, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			s := sample(ctx, c.Bases(), key, 20*time.Millisecond)
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				return Burst(ctx, spread(c.Bases(), per, func(k int) string { return fmt.Sprintf("/products/%d", 1+k) }))
			})
			peak, samples := s.done()
			r.Figures["peak_pool_waiters"] = peak
			r.Figures["waiting_samples"] = float64(samples)
			return nil
		})
		if p := r.phase("burst"); p != nil {
			b := p.Load
			peaks[limit], failP99[limit] = r.Figures["peak_pool_waiters"], b.FailP99Ms
			shed := 0
			for _, res := range p.results {
				if res.Status == 503 && res.RetryAfter {
					shed++
				}
			}
			x.Table = append(x.Table, []string{label, itoa(b.OK), itoa(shed), itoa(b.Failed - shed), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
				fmtMs(b.FailP99Ms), fnum(r.Figures["peak_pool_waiters"]), itoa(r.DBQueries)})
			x.check(b.Failed == shed, "shedding %s: every failure is a 503 with Retry-After (%d of %d)", limit, shed, b.Failed)
		}
		if err != nil {
			return x.fail(err)
		}
	}
	x.check(peaks["4"] <= 4, "with shedding the pool queue peaks at %s (want ≤ 4)", fnum(peaks["4"]))
	x.check(peaks["100000"] > 4*peaks["4"], "without shedding it peaks at %s", fnum(peaks["100000"]))
	x.check(failP99["4"]*4 < failP99["100000"], "refusals come fast with shedding: failures' p99 %s vs %s", fmtMs(failP99["4"]), fmtMs(failP99["100000"]))
	return x
}
