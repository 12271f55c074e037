package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// swr is experiment 3, an expiring hot key: a hard expiry (lock) makes every
// request wait for the reload, a soft one (stale-while-revalidate) does not.
func (l *Lab) swr(ctx context.Context) *Experiment {
	n, per := l.instances, l.perInstance
	x := &Experiment{Name: "swr", Title: "an expiring hot key: lock (hard expiry) vs stale-while-revalidate (soft expiry)",
		Setup: fmt.Sprintf("prime GET /products/1, change the product's name in PostgreSQL behind the cache's back, wait 1.2 s "+
			"(past a 1 s TTL), then %d×%d concurrent GETs with %s on the DB link, then a GET every 50 ms until one serves the new "+
			"name; the hit row is the same burst on a fresh entry, for scale (CPU: %d instances and the client share this machine)",
			n, per, l.delay, n),
		Expect: "lock: every request waits for the one reload (p99 ≥ link delay); swr: every answer STALE with the old name, as " +
			"fast as a hit, one background refresh, and soon after a HIT with the new name",
		Columns: []string{"mode", "burst answers", "old value", "p50", "p99", "queries in burst", "new value first served", "DB queries (all)"}}
	rows := []struct {
		label, kind string
		env         map[string]string
		total       int // burst size; 0: instances × per-instance
	}{
		{"hit, fresh entry", "hit", map[string]string{"CACHE_MODE": "swr"}, 0},
		{"lock, CACHE_TTL=1s", "lock", map[string]string{"CACHE_MODE": "lock", "CACHE_TTL": "1s", "CACHE_SOFT_TTL": "500ms"}, 0},
		{"swr, CACHE_SOFT_TTL=1s", "swr", map[string]string{"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "1s"}, 0},
		// Stale at memory speed: the key is read steadily (so each
		// instance holds it in L1), then 200 reads land after its soft
		// expiry, served from L1 while the one refresh runs.
		{"swr + L1 (L1_TTL=500ms), 200 reads", "swr-l1", map[string]string{"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "1s", "L1_TTL": "500ms"}, 200},
		// The same 200 reads on a fresh entry in L1: this machine's floor
		// for such a burst, client included.
		{"hit from L1, fresh entry, 200 reads", "hit-l1", map[string]string{"CACHE_MODE": "swr", "L1_TTL": "500ms"}, 200},
	}
	p99 := map[string]float64{}
	for _, row := range rows {
		newName := "Product 1 v2-" + randomHex(3)
		isNew := func(res Result) bool { return res.Status == 200 && strings.Contains(res.Body, newName) }
		r, err := l.row(ctx, x, row.label, n, row.env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			prime := l.phase(r, "prime", func() ([]Result, time.Duration) {
				res := get(ctx, c.Bases()[0], "/products/1")
				return []Result{res}, res.Latency
			})
			if prime.Load.OK != 1 {
				return fmt.Errorf("prime: %s", statusSummary(prime.Load.ByStatus))
			}
			if err := l.pg.exec(ctx, c.DB, "UPDATE products SET name = $1 WHERE id = 1", newName); err != nil {
				return err
			}
			r.Direct++
			switch {
			case row.kind == "swr-l1":
				// A hot key is read all the time: every instance keeps its
				// L1 copy, so the burst finds the stale value in memory.
				if err := keepReading(ctx, c.Bases(), "/products/1", 1200*time.Millisecond); err != nil {
					return err
				}
			case !strings.HasPrefix(row.kind, "hit"):
				if err := sleepCtx(ctx, 1200*time.Millisecond); err != nil {
					return err
				}
			}
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				total := n * per
				if row.total > 0 {
					total = row.total
				}
				rs, wall := Burst(ctx, spread(c.Bases(), total, samePath("/products/1")))
				t0 := time.Now().Add(-wall)
				first := time.Duration(-1)
				for _, res := range rs {
					if isNew(res) && (first < 0 || res.Latency < first) {
						first, r.Values["new_value_first_served"] = res.Latency, "burst "+res.XCache
					}
				}
				// Otherwise poll (the background refresh crosses the link
				// inside this phase) until the new value is served.
				for first < 0 && !strings.HasPrefix(row.kind, "hit") && time.Since(t0) < 3*time.Second {
					if res := get(ctx, c.Bases()[len(c.Bases())-1], "/products/1"); isNew(res) {
						first, r.Values["new_value_first_served"] = time.Since(t0), "later GET "+res.XCache
						break
					}
					if sleepCtx(ctx, 50*time.Millisecond) != nil {
						break
					}
				}
				r.Figures["new_value_first_served_ms"] = ms(first)
				return rs, wall
			})
			return nil
		})
		if burst := r.phase("burst"); burst != nil {
			old := 0
			for _, res := range burst.results {
				if res.Status == 200 && !isNew(res) {
					old++
				}
			}
			r.Figures["old_value_answers"] = float64(old)
			b := burst.Load
			p99[row.kind] = b.P99Ms
			served := "-"
			if v := r.Values["new_value_first_served"]; v != "" {
				served = fmt.Sprintf("+%s (%s)", fmtMs(r.Figures["new_value_first_served_ms"]), v)
			}
			x.Table = append(x.Table, []string{row.label, statusSummary(b.XCache), itoa(old), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
				itoa(burst.DBLink.Executes), served, itoa(r.DBQueries)})
			switch row.kind {
			case "hit", "hit-l1":
				x.check(b.XCache["HIT"] == b.Requests && burst.DBLink.Executes == 0, "hit: %d/%d HIT, %d queries", b.XCache["HIT"], b.Requests, burst.DBLink.Executes)
			case "lock":
				x.check(b.XCache["MISS"] == b.Requests && b.P99Ms >= ms(l.delay),
					"lock: %d/%d MISS, p99 %s (want all MISS, p99 ≥ %s)", b.XCache["MISS"], b.Requests, fmtMs(b.P99Ms), l.delay)
				x.check(burst.DBLink.Executes == 1, "lock: %d query for the burst (want 1)", burst.DBLink.Executes)
			case "swr":
				x.check(b.XCache["STALE"] == b.Requests && old == b.Requests,
					"swr: %d/%d answers STALE, %d with the old value (want all)", b.XCache["STALE"], b.Requests, old)
				x.check(b.P99Ms < p99["lock"]/2 && b.P99Ms <= 2*p99["hit"]+20,
					"swr: p99 %s, like a hit (%s) and far below waiting for the reload (%s)", fmtMs(b.P99Ms), fmtMs(p99["hit"]), fmtMs(p99["lock"]))
				x.check(burst.DBLink.Executes == 1, "swr: %d background query for the burst (want 1)", burst.DBLink.Executes)
				x.check(r.Values["new_value_first_served"] == "later GET HIT", "swr: the new value was first served by: %s (want a later GET, HIT)",
					r.Values["new_value_first_served"])
			case "swr-l1":
				x.check(b.XCache["STALE"] == b.Requests && old == b.Requests,
					"swr + L1: %d/%d answers STALE, %d with the old value (want all)", b.XCache["STALE"], b.Requests, old)
				x.check(b.P99Ms <= 10, "swr + L1: p99 %s for %d stale reads (want ≤ 10 ms)", fmtMs(b.P99Ms), b.Requests)
				x.check(burst.DBLink.Executes == 1, "swr + L1: %d background query fleet-wide (want 1)", burst.DBLink.Executes)
				x.check(strings.HasPrefix(r.Values["new_value_first_served"], "later GET"), "swr + L1: the new value was first served by: %s (want a later GET)",
					r.Values["new_value_first_served"])
			}
		}
		if err != nil {
			return x.fail(err)
		}
	}
	return x
}

// keepReading GETs path on every instance every 100 ms for d: the steady
// traffic of a hot key.
func keepReading(ctx context.Context, bases []string, path string, d time.Duration) error {
	hc := newClient(1) // one connection per instance, kept across rounds
	defer hc.CloseIdleConnections()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, b := range bases {
			do(ctx, hc, Target{Base: b, Path: path})
		}
		if err := sleepCtx(ctx, min(100*time.Millisecond, time.Until(end))); err != nil {
			return err
		}
	}
	return nil
}
