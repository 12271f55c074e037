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
		Columns: []string{"mode", "DB queries", "app loads", "ok", "failed", "p50", "p99", "p99 ÷ query", "lock keys left"}}
	if err != nil {
		return x.fail(err)
	}
	for _, mode := range []string{"naive", "singleflight", "lock", "swr", "xfetch"} {
		env := map[string]string{"CACHE_MODE": mode, "SHED_MAX_WAITING": "100000", "ADMISSION": "queue", "DB_MAIN_MAX_CONNS": itoa(int64(conns)),
			"DB_ACQUIRE_TIMEOUT": "8s", "DB_STATEMENT_TIMEOUT": "1s", "REQUEST_TIMEOUT": "9s"}
		r, err := l.row(ctx, x, mode, n, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				return Burst(ctx, spread(c.Bases(), total, samePath("/products/1")))
			})
			keys, err := l.lockKeys(ctx)
			r.Figures["lock_keys_left"] = float64(keys)
			return err
		})
		if p := r.phase("burst"); p != nil {
			b := p.Load
			x.Table = append(x.Table, []string{mode, itoa(r.DBQueries), fnum(r.App["stampede_cache_loads_total"]),
				itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms), fmt.Sprintf("%.2f×", b.P99Ms/ms(l.delay)), fnum(r.Figures["lock_keys_left"])})
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
	return x
}
