package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// catalogue measures how start-up, memory and reads grow with the number
// of products: the unknown-id filter is the only part of the app whose
// cost depends on the catalogue, and it must never hold up a request or
// start-up.
func (l *Lab) catalogue(ctx context.Context) *Experiment {
	const known, unknown, budget = 2000, 5000, 20
	x := &Experiment{Name: "catalogue", Title: "cost as the catalogue grows",
		Setup: fmt.Sprintf("1 instance on a database of N products (seeded, then ANALYZE), no link delay, L1 off, "+
			"UNKNOWN_ID_LOOKUPS=%d; %d GETs of random known ids, then %d GETs of unique unknown ids above the highest, 8 at a time", budget, known, unknown),
		Expect: "listening within 2 s and the first request answered at once whatever N (the filter loads in the background); " +
			"RSS at most 30 MB above the 1 000-product row; unknown ids cost at most the lookup budget per second plus one catch-up per second",
		upkeepScans: true,
		Columns: []string{"products", "listening after", "filter loaded after", "first request", "RSS", "known p50", "known p99",
			"unknown p99", "queries for unknown ids"}}
	var baseRSS float64
	for _, n := range l.catalogueSizes {
		r, err := l.catalogueRow(ctx, x, n, known, unknown, budget)
		if err != nil {
			return x.fail(err)
		}
		rss := r.Figures["rss_mb"]
		if n <= 1000 || baseRSS == 0 {
			baseRSS = rss
		}
		secs := r.Figures["unknown_seconds"]
		bound := int64(budget + budget*secs + secs + 1 + unknown/100)
		x.Table = append(x.Table, []string{itoa(int64(n)), fmtMs(r.Figures["listen_ms"]), fmtMs(r.Figures["filter_ms"]),
			fmtMs(r.Figures["first_ms"]), fmt.Sprintf("%.0f MB", rss), fmtMs(r.Figures["known_p50_ms"]), fmtMs(r.Figures["known_p99_ms"]),
			fmtMs(r.Figures["unknown_p99_ms"]), fnum(r.Figures["unknown_queries"])})
		x.check(r.Figures["listen_ms"] <= 2000, "%d products: listening after %s (want ≤ 2 s)", n, fmtMs(r.Figures["listen_ms"]))
		x.check(rss-baseRSS <= 30, "%d products: RSS %.0f MB, %.0f MB above the smallest catalogue (want ≤ 30)", n, rss, rss-baseRSS)
		x.check(int64(r.Figures["unknown_queries"]) <= bound, "%d products: %d unknown ids cost %.0f queries (want ≤ %d)",
			n, unknown, r.Figures["unknown_queries"], bound)
	}
	return x
}

// catalogueRow seeds a template of n products and runs one instance on a
// copy of it.
func (l *Lab) catalogueRow(ctx context.Context, x *Experiment, n, known, unknown, budget int) (*Row, error) {
	tmpl := "lab_catalogue_" + randomHex(4)
	if err := l.pg.CreateDatabase(ctx, tmpl, l.template); err != nil {
		return nil, err
	}
	defer func() { _ = l.pg.DropDatabase(context.Background(), tmpl) }()
	for _, sql := range []string{
		`INSERT INTO products (id, name, price_cents, stock) SELECT g, 'Product ' || g, 100 + (g * 37) % 9900, 1000 FROM generate_series(1001, ` + strconv.Itoa(n) + `) AS g`,
		`ANALYZE products`, // not VACUUM: an all-visible small table makes the filter's read an index-only scan, which idx_scan would count as a product query
	} {
		if err := l.pg.exec(ctx, tmpl, sql); err != nil {
			return nil, fmt.Errorf("seed %d products: %w", n, err)
		}
	}
	if err := l.pg.WaitNoBackends(ctx, tmpl, 20*time.Second); err != nil {
		return nil, err
	}
	saved := l.template
	l.template, l.filterLoadTimed = tmpl, true
	defer func() { l.template, l.filterLoadTimed = saved, false }()
	env := map[string]string{"UNKNOWN_ID_FILTER": "true", "UNKNOWN_ID_LOOKUPS": itoa(int64(budget))}
	r, err := l.row(ctx, x, itoa(int64(n))+" products", 1, env, false, func(c *Cluster, r *Row) error {
		inst := c.Instances[0]
		r.Figures["listen_ms"] = ms(inst.Listening.Sub(inst.Started))
		first := get(ctx, inst.Base, fmt.Sprintf("/products/%d", n+5_000_000))
		r.Figures["first_ms"] = ms(first.Latency)
		loaded, err := waitFilter(ctx, inst.Base)
		if err != nil {
			return err
		}
		r.Figures["filter_ms"] = ms(loaded.Sub(inst.Started))
		r.Figures["rss_mb"] = rssMB(inst.cmd.Process.Pid)
		p := l.phase(r, "known", func() ([]Result, time.Duration) {
			return Stream(ctx, spread(c.Bases(), known, func(k int) string { return fmt.Sprintf("/products/%d", 1+(k*7919)%n) }), 8)
		})
		r.Figures["known_p50_ms"], r.Figures["known_p99_ms"] = p.Load.P50Ms, p.Load.P99Ms
		p = l.phase(r, "unknown", func() ([]Result, time.Duration) {
			return Stream(ctx, spread(c.Bases(), unknown, func(k int) string { return fmt.Sprintf("/products/%d", n+10_000_000+k) }), 8)
		})
		r.Figures["unknown_p99_ms"], r.Figures["unknown_seconds"] = p.Load.P99Ms, p.Load.WallMs/1000
		r.Figures["unknown_queries"] = float64(p.DBLink.Executes)
		return nil
	})
	return r, err
}

// waitFilter polls /metrics until the unknown-id filter has loaded (or the
// binary has no such metric), and returns when it saw it.
func waitFilter(ctx context.Context, base string) (time.Time, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := scrape(ctx, base, "stampede_unknown_id_filter_loaded")
		if v, ok := m["stampede_unknown_id_filter_loaded"]; err == nil && (!ok || v == 1) {
			return time.Now(), nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, fmt.Errorf("%s: the unknown-id filter did not load within 5 minutes", base)
}

// rssMB reads a process's resident memory from /proc (0 where there is
// no /proc).
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
