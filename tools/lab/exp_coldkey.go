package main

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// coldKey is experiment 1, a cold hot key: the same burst on an empty cache
// in every cache mode, counting the queries each lets through.
func (l *Lab) coldKey(ctx context.Context) *Experiment {
	n, per := l.instances, l.perInstance
	total := n * per
	// Every instance's pools must fit the server together, or naive's
	// queries fail on connecting rather than show what they cost: 10 each
	// where they fit (5 instances), fewer at 20, with room for the lab and
	// each instance's reports pool (opened, and pinged, at start).
	conns := 10
	free, err := l.pg.ConnectionsFree(ctx)
	reports, _ := strconv.Atoi(baseEnv["DB_REPORTS_MAX_CONNS"])
	if fit := (free - 10 - n*reports) / n; err == nil && fit < conns {
		conns = fit
		if fit < 1 {
			err = fmt.Errorf("%d instances do not fit the server's %d free connections", n, free)
		}
	}
	x := &Experiment{Name: "cold-key", Title: "one cold hot key, every cache mode",
		Setup: fmt.Sprintf("%d instances × %d concurrent GET /products/1 on an empty cache, %s on the DB link, L1 off, "+
			"rate limit off; shedding off and a long acquire timeout (ADMISSION=queue, SHED_MAX_WAITING=100000, DB_MAIN_MAX_CONNS=%d "+
			"(10, or what fits the server's max_connections), DB_ACQUIRE_TIMEOUT=8s, DB_STATEMENT_TIMEOUT=1s, REQUEST_TIMEOUT=9s) "+
			"so that only the cache mode decides", n, per, l.delay, conns),
		Expect: "naive: one query per request; singleflight: one per instance; lock, swr, xfetch: 1 query, 0 lock keys left, all " +
			"answered, p99 ≤ 1.3 × the query time (the link's round trip: a load is one, its statement prepared at connect)",
		Columns: []string{"mode", "DB queries", "app loads", "ok", "failed", "p50", "p99", "p99 ÷ query", "lock keys left",
			"last query sent after", "p99 after its answer"}}
	if err != nil {
		return x.fail(err)
	}
	for _, mode := range []string{"naive", "singleflight", "lock", "swr", "xfetch"} {
		env := map[string]string{"CACHE_MODE": mode, "SHED_MAX_WAITING": "100000", "ADMISSION": "queue", "DB_MAIN_MAX_CONNS": itoa(int64(conns)),
			"DB_ACQUIRE_TIMEOUT": "8s", "DB_STATEMENT_TIMEOUT": "1s", "REQUEST_TIMEOUT": "9s"}
		r, err := l.row(ctx, x, mode, n, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			var sent time.Time // the burst's barrier
			p := l.phase(r, "burst", func() ([]Result, time.Duration) {
				rs, wall, t0 := burstAt(ctx, spread(c.Bases(), total, samePath("/products/1")))
				sent = t0
				return rs, wall
			})
			if at := p.DBLink.LastExecute; at > 0 && p.DBLink.Executes > 0 {
				// The link saw the Execute after its delay: the query left
				// the app one delay earlier.
				r.Figures["query_sent_ms"] = ms(time.Unix(0, at).Add(-l.delay).Sub(sent))
			}
			keys, err := l.lockKeys(ctx)
			r.Figures["lock_keys_left"] = float64(keys)
			return err
		})
		if p := r.phase("burst"); p != nil {
			b := p.Load
			// Where a p99 above the query goes: before the (last) query
			// left the app, and after its answer came back.
			before, after := "-", "-"
			// Only where the queries are few: naive's last query is one of
			// a thousand queued on the pool, and dates nothing.
			if q, ok := r.Figures["query_sent_ms"]; ok && r.DBQueries <= int64(n) {
				before, after = fmtMs(q), fmtMs(b.P99Ms-q-ms(l.delay))
			}
			x.Table = append(x.Table, []string{mode, itoa(r.DBQueries), fnum(r.App["stampede_cache_loads_total"]),
				itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms), fmt.Sprintf("%.2f×", b.P99Ms/ms(l.delay)), fnum(r.Figures["lock_keys_left"]),
				before, after})
			switch mode {
			case "naive":
				x.check(r.DBQueries >= int64(total)*9/10, "naive: %d queries for %d requests (want ≥ 90%%)", r.DBQueries, total)
			case "singleflight":
				x.check(r.DBQueries >= 1 && r.DBQueries <= int64(n), "singleflight: %d queries (want 1..%d, one per instance)", r.DBQueries, n)
			default:
				x.check(r.DBQueries == 1 && r.Figures["lock_keys_left"] == 0 && b.OK == total,
					"%s: %d query, %d lock keys left, %d/%d ok (want 1, 0, all)", mode, r.DBQueries, int(r.Figures["lock_keys_left"]), b.OK, total)
				if l.delay > 0 {
					x.check(b.P99Ms <= 1.3*ms(l.delay), "%s: p99 %s = %.2f × the query time %s (want ≤ 1.3×)",
						mode, fmtMs(b.P99Ms), b.P99Ms/ms(l.delay), fmtMs(ms(l.delay)))
				}
			}
		}
		if err != nil {
			return x.fail(err)
		}
	}
	if l.delay > 0 {
		if err := l.coldKeyFloor(ctx, x, n, total); err != nil {
			return x.fail(err)
		}
	}
	return x
}

// coldKeyFloor adds the lab's floor to the table: the same burst against n
// bare gin handlers, each a perfect single-flight of exactly the query
// time (flightWait) with no Redis and no database. No stampede guard can
// answer this burst faster here; what a mode's p99 has above the floor's
// is what the mode costs, the rest is this machine and this client.
func (l *Lab) coldKeyFloor(ctx context.Context, x *Experiment, n, total int) error {
	bases := make([]string, n)
	for i := range bases {
		base, stop, err := serveBareEnv(ctx, `{"id":1,"name":"Product 1","price_cents":137}`, bareAsService,
			bareWaitEnv+"="+l.delay.String())
		if err != nil {
			return err
		}
		defer stop()
		bases[i] = base
	}
	b := Summarize(Burst(ctx, spread(bases, total, samePath("/products/1"))))
	x.Table = append(x.Table, []string{"floor: bare single-flight", "0", "-", itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
		fmt.Sprintf("%.2f×", b.P99Ms/ms(l.delay)), "-", "0 ms", fmtMs(b.P99Ms - ms(l.delay))})
	x.note("floor (%d bare gin handlers, each answering every request the moment one shared %s wait ends): p99 %s = %.2f × the query time; "+
		"the goal (issue 28) is ≤ 1.1× for lock, swr and xfetch", n, l.delay, fmtMs(b.P99Ms), b.P99Ms/ms(l.delay))
	return nil
}
