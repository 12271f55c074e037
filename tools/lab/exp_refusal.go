package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// refusal measures how long a request that will be refused waits before it
// hears so: a burst of cold reads far beyond a tiny pool on a slow
// database, where all but a few must be refused.
func (l *Lab) refusal(ctx context.Context) *Experiment {
	const burst, conns, maxWaiting, linkDelay = 200, 2, 4, 2 * time.Second
	x := &Experiment{Name: "refusal", Title: "how fast is a refusal?",
		Setup: fmt.Sprintf("1 instance, DB_MAIN_MAX_CONNS=%d, SHED_MAX_WAITING=%d, +%s on the DB link; %d concurrent GETs of "+
			"distinct never-read products", conns, maxWaiting, linkDelay, burst),
		Expect: "all but the pool and its queue refused with 503 + Retry-After (the goal, not yet met: the median refusal within 5 ms); " +
			"the same burst against a bare gin handler, and against one that looks in Redis before it refuses, are the lab's floors",
		Columns: []string{"target", "requests", "ok", "refused (503)", "other", "answer min", "answer p50", "answer p99"}}
	env := map[string]string{"DB_MAIN_MAX_CONNS": itoa(conns), "SHED_MAX_WAITING": itoa(maxWaiting), "REQUEST_TIMEOUT": "5s"}
	var refused []time.Duration
	var ok, other int
	_, err := l.row(ctx, x, "burst", 1, env, false, func(c *Cluster, r *Row) error {
		l.dbProxy.SetDelay(linkDelay)
		defer l.dbProxy.SetDelay(0)
		p := l.phase(r, "burst", func() ([]Result, time.Duration) {
			return Burst(ctx, spread(c.Bases(), burst, refusalPath))
		})
		for _, res := range p.results {
			switch {
			case res.Status == 503:
				refused = append(refused, res.Latency)
			case res.Status == 200:
				ok++
			default:
				other++
			}
		}
		return nil
	})
	if err != nil {
		return x.fail(err)
	}
	// The floors: the same burst against a bare gin handler on the
	// service's server, in a process of its own, answering at once; and
	// against one that first looks for the product in Redis (a key never
	// written) and refuses with a 503 — as little as a refusal that must
	// look in the cache first can cost. What the service adds above them is
	// the service's; below the first, the lab's.
	bareLat, err := l.refusalFloor(ctx, burst, "")
	if err != nil {
		return x.fail(err)
	}
	getLat, err := l.refusalFloor(ctx, burst, l.redisAddr)
	if err != nil {
		return x.fail(err)
	}
	p50 := pct(refused, 0.5)
	x.Table = append(x.Table,
		[]string{"service", itoa(burst), itoa(int64(ok)), itoa(int64(len(refused))), itoa(int64(other)),
			fmtMs(pct(refused, 0)), fmtMs(p50), fmtMs(pct(refused, 0.99))},
		[]string{"bare gin handler (the lab's floor)", itoa(burst), itoa(int64(len(bareLat))), "0", itoa(int64(burst - len(bareLat))),
			fmtMs(pct(bareLat, 0)), fmtMs(pct(bareLat, 0.5)), fmtMs(pct(bareLat, 0.99))},
		[]string{"bare gin handler, one Redis GET, then 503", itoa(burst), "0", itoa(int64(len(getLat))), itoa(int64(burst - len(getLat))),
			fmtMs(pct(getLat, 0)), fmtMs(pct(getLat, 0.5)), fmtMs(pct(getLat, 0.99))})
	x.check(len(refused) >= burst-2*(conns+maxWaiting), "%d of %d refused (want all but the pool and its queue)", len(refused), burst)
	// The goal (issue 28) is a median refusal within 5 ms; it is reported,
	// not checked, until it is met on this machine (benchmarks.md, "A
	// second floor": even the bare handler that makes one GET before its
	// 503 takes a median of about 8 ms here, and the service adds more).
	x.note("median refusal %s, fastest %s (goal: ≤ 5 ms); the bare handler's median answer in the same run %s, "+
		"its median refusal after one Redis GET %s", fmtMs(p50), fmtMs(pct(refused, 0)), fmtMs(pct(bareLat, 0.5)), fmtMs(pct(getLat, 0.5)))
	return x
}

// refusalFloor runs the refusal burst against a bare handler and returns
// the latencies of its answers: 200s when redisAddr is empty, 503s after a
// Redis GET when it is set (anything else is left out, and shows in the
// table as "other").
func (l *Lab) refusalFloor(ctx context.Context, burst int, redisAddr string) ([]time.Duration, error) {
	var env []string
	want := 200
	if redisAddr != "" {
		env, want = []string{bareRedisEnv + "=" + redisAddr}, 503
	}
	bare, stop, err := serveBareEnv(ctx, `{"id":1}`, bareAsService, env...)
	if err != nil {
		return nil, err
	}
	defer stop()
	results, _ := Burst(ctx, spread([]string{bare}, burst, refusalPath))
	var lat []time.Duration
	for _, res := range results {
		if res.Err == "" && res.Status == want {
			lat = append(lat, res.Latency)
		}
	}
	return lat, nil
}

// refusalPath is the k-th read of a refusal burst: a product nobody has
// read yet, the same ids for the service and its floors.
func refusalPath(k int) string { return fmt.Sprintf("/products/%d", 300+k) }

// pct is the q-quantile of ds in ms (sorting ds), 0 when empty.
func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ms(ds[min(len(ds)-1, int(q*float64(len(ds))))])
}
