package main

import (
	"context"
	"fmt"
	"time"
)

// sanity checks the counting method: three sequential misses must be three
// products_pkey scans, and shows what reading the counter 1.5 s after the
// load (while the instance still runs) would have said.
func (l *Lab) sanity(ctx context.Context) *Experiment {
	x := &Experiment{Name: "sanity", Title: "does one product query show up as one index scan?",
		Setup:   "1 instance, no link delay, 3 sequential GETs of 3 different uncached ids (each a MISS: one query each)",
		Expect:  "3 index scans of products_pkey, 3 Execute messages on the link",
		Columns: []string{"requests", "MISS", "link executes", "pg_stat read 1.5 s after", "pg_stat read after stop"}}
	r, err := l.row(ctx, x, "3 misses", 1, nil, false, func(c *Cluster, r *Row) error {
		l.phase(r, "gets", func() ([]Result, time.Duration) {
			t0 := time.Now()
			var rs []Result
			for id := 11; id <= 13; id++ {
				rs = append(rs, get(ctx, c.Bases()[0], fmt.Sprintf("/products/%d", id)))
			}
			return rs, time.Since(t0)
		})
		if err := sleepCtx(ctx, 1500*time.Millisecond); err != nil {
			return err
		}
		n, err := l.pg.IndexScans(ctx, c.DB)
		r.Figures["scans_read_1_5s_after"] = float64(n)
		return err
	})
	if p := r.phase("gets"); p != nil {
		early := int64(r.Figures["scans_read_1_5s_after"])
		x.Table = append(x.Table, []string{itoa(p.Load.Requests), itoa(p.Load.XCache["MISS"]),
			itoa(p.DBLink.Executes), itoa(early), itoa(r.DBQueries)})
		x.check(err != nil || r.DBQueries == int64(p.Load.XCache["MISS"]) && p.Load.XCache["MISS"] == 3,
			"3 misses = %d scans counted after stop", r.DBQueries)
		if err == nil && early != r.DBQueries {
			x.note("read while the instance still ran, 1.5 s after the load, pg_stat showed %d of the %d scans: "+
				"PostgreSQL 15 keeps a backend's counters pending for up to 10 s (PGSTAT_IDLE_INTERVAL) when it "+
				"flushed less than 1 s before, so the lab reads them after the instances stop (a backend flushes "+
				"on exit) on a database of its own", early, r.DBQueries)
		}
	}
	return x.fail(err)
}
