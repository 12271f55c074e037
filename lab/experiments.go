package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// maxDirectLoads is cache.Config.MaxDirectLoads' default: the most loads
// one instance runs at once while Redis is unusable.
const maxDirectLoads = 8

// row runs one configuration on a cluster of its own: start n instances with
// env, run body, read the service's metrics, stop the instances and count
// the queries PostgreSQL executed. It also checks that the two counts agree:
// the server's idx_scan and the Execute messages seen on the link.
func (l *Lab) row(ctx context.Context, x *Experiment, label string, n int, env map[string]string, viaRedisProxy bool,
	body func(*Cluster, *Row) error,
) (*Row, error) {
	r := &Row{Label: label, Env: env, Figures: map[string]float64{}, Values: map[string]string{}}
	x.Rows = append(x.Rows, r)
	c, err := l.StartCluster(ctx, x.Name+"-"+slug(label), n, env, viaRedisProxy)
	if err != nil {
		return r, err
	}
	link0 := l.dbProxy.Stats()
	bodyErr := body(c, r)
	r.App = scrapeSum(ctx, c.Bases())
	l.redisProxy.SetDown(false)
	c.Stop() // background loads finish before the process exits
	r.LinkExecutes = l.dbProxy.Stats().Sub(link0).Executes
	scans, err := c.Close(ctx)
	r.DBQueries = scans
	l.dbProxy.Reset()
	if err == nil {
		x.check(r.DBQueries == r.LinkExecutes+r.Direct,
			"%s: queries counted by PostgreSQL (%d) = Execute messages on the link (%d)%s",
			label, r.DBQueries, r.LinkExecutes, plural(r.Direct, " + %d run by the lab itself"))
	}
	return r, errors.Join(bodyErr, err)
}

// phase runs one load (fn may return nil results for a pure wait) and
// records it with what crossed the links meanwhile.
func (l *Lab) phase(r *Row, name string, fn func() ([]Result, time.Duration)) *Phase {
	db0, rd0 := l.dbProxy.Stats(), l.redisProxy.Stats()
	rs, wall := fn()
	p := &Phase{Name: name, DBLink: l.dbProxy.Stats().Sub(db0), results: rs}
	if rs != nil {
		p.Load = Summarize(rs, wall)
	}
	if rd := l.redisProxy.Stats().Sub(rd0); rd != (ProxyStats{}) {
		p.RedisLink = &rd
	}
	r.Phases = append(r.Phases, p)
	return p
}

// spread builds total requests, round-robin over the instances: request k
// goes to instance k mod n, for path(k).
func spread(bases []string, total int, path func(k int) string) []Target {
	ts := make([]Target, total)
	for k := range ts {
		ts[k] = Target{Base: bases[k%len(bases)], Path: path(k)}
	}
	return ts
}

func samePath(p string) func(int) string { return func(int) string { return p } }

// lockKeys counts the lock:* keys left in the lab's Redis database.
func (l *Lab) lockKeys(ctx context.Context) (int, error) {
	n := 0
	iter := l.rdb.Scan(ctx, 0, "lock:*", 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}

// ---- sanity ------------------------------------------------------------------

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

// ---- 1. cold hot key ---------------------------------------------------------

func (l *Lab) coldKey(ctx context.Context) *Experiment {
	n, per := l.instances, l.perInstance
	x := &Experiment{Name: "cold-key", Title: "one cold hot key, every cache mode",
		Setup: fmt.Sprintf("%d instances × %d concurrent GET /products/1 on an empty cache, %s on the DB link, L1 off, "+
			"rate limit off; shedding off and a long acquire timeout (SHED_MAX_WAITING=100000, DB_MAIN_MAX_CONNS=10, "+
			"DB_ACQUIRE_TIMEOUT=8s, DB_STATEMENT_TIMEOUT=1s, REQUEST_TIMEOUT=9s) so that only the cache mode decides", n, per, l.delay),
		Expect:  "naive: one query per request; singleflight: one per instance; lock, swr, xfetch: 1 query, 0 lock keys left; all answered",
		Columns: []string{"mode", "DB queries", "app loads", "ok", "failed", "p50", "p99", "lock keys left"}}
	total := n * per
	for _, mode := range []string{"naive", "singleflight", "lock", "swr", "xfetch"} {
		env := map[string]string{"CACHE_MODE": mode, "SHED_MAX_WAITING": "100000", "DB_MAIN_MAX_CONNS": "10",
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
				itoa(b.OK), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms), fnum(r.Figures["lock_keys_left"])})
			switch mode {
			case "naive":
				x.check(r.DBQueries >= int64(total)*9/10, "naive: %d queries for %d requests (want ≥ 90%%)", r.DBQueries, total)
			case "singleflight":
				x.check(r.DBQueries >= 1 && r.DBQueries <= int64(n), "singleflight: %d queries (want 1..%d, one per instance)", r.DBQueries, n)
			default:
				x.check(r.DBQueries == 1 && r.Figures["lock_keys_left"] == 0 && b.OK == total,
					"%s: %d query, %d lock keys left, %d/%d ok (want 1, 0, all)", mode, r.DBQueries, int(r.Figures["lock_keys_left"]), b.OK, total)
			}
		}
		if err != nil {
			return x.fail(err)
		}
	}
	return x
}

// ---- 2. lock TTL shorter than the query --------------------------------------

func (l *Lab) lockTTL(ctx context.Context) *Experiment {
	n, per := l.instances, l.perInstance
	light := max(1, per/10)
	x := &Experiment{Name: "lock-ttl", Title: "lock TTL shorter than the query, with and without the watchdog",
		Setup: fmt.Sprintf("%d instances, concurrent GET /products/1 on a cold key, CACHE_MODE=lock, LOCK_TTL=100ms, %s on the DB link "+
			"(the query outlives the lock; link time is not statement time, so DB_STATEMENT_TIMEOUT=50ms < LOCK_TTL passes the "+
			"config check), DB_ACQUIRE_TIMEOUT=2s, REQUEST_TIMEOUT=5s, LOCK_WAIT=2s; a light burst (%d per instance) isolates the "+
			"lock, the full burst (%d per instance) shows the watchdog on a CPU-starved machine", n, l.delay, light, per),
		Expect: "without the watchdog the lock expires mid-query and another holder queries too (the seed measured 2 " +
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
					"seed's 2 (whose plain SET stored the first value)", n, r.DBQueries)
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

// ---- 3. stale-while-revalidate -----------------------------------------------

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
	}{
		{"hit, fresh entry", "hit", map[string]string{"CACHE_MODE": "swr"}},
		{"lock, CACHE_TTL=1s", "lock", map[string]string{"CACHE_MODE": "lock", "CACHE_TTL": "1s", "CACHE_SOFT_TTL": "500ms"}},
		{"swr, CACHE_SOFT_TTL=1s", "swr", map[string]string{"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "1s"}},
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
			if row.kind != "hit" {
				if err := sleepCtx(ctx, 1200*time.Millisecond); err != nil {
					return err
				}
			}
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				rs, wall := Burst(ctx, spread(c.Bases(), n*per, samePath("/products/1")))
				t0 := time.Now().Add(-wall)
				first := time.Duration(-1)
				for _, res := range rs {
					if isNew(res) && (first < 0 || res.Latency < first) {
						first, r.Values["new_value_first_served"] = res.Latency, "burst "+res.XCache
					}
				}
				// Otherwise poll (the background refresh crosses the link
				// inside this phase) until the new value is served.
				for first < 0 && row.kind != "hit" && time.Since(t0) < 3*time.Second {
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
			case "hit":
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
			}
		}
		if err != nil {
			return x.fail(err)
		}
	}
	return x
}

// ---- 4. database down ------------------------------------------------------------

func (l *Lab) dbDown(ctx context.Context) *Experiment {
	n := l.instances
	const total, uncached, rate = 2000, 200, 400
	x := &Experiment{Name: "db-down", Title: "the database is down: circuit breaker vs none",
		Setup: fmt.Sprintf("%d instances, CACHE_MODE=swr, CACHE_SOFT_TTL=1s; GET /products/1 primed and left to go stale; "+
			"then the DB link refuses every connection and %d GETs arrive at %d/s (open loop): every 10th for "+
			"the cached id, the rest spread over %d uncached ids", n, total, rate, uncached),
		Expect: "without a breaker every miss tries the dead database; with BREAKER_FAILURES=5 the breaker opens after a " +
			"few failures and the rest are refused (503 + Retry-After) without touching it; the cached id is served stale either way",
		Columns: []string{"breaker", "ok", "STALE", "failed", "p50", "p99", "failures' p99", "DB link attempts", "refused by breaker"}}
	attempts, failP99 := map[string]int64{}, map[string]float64{}
	for _, failures := range []string{"1000000", "5"} {
		label := "off (BREAKER_FAILURES=" + failures + ")"
		if failures == "5" {
			label = "on (BREAKER_FAILURES=5)"
		}
		env := map[string]string{"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "1s", "BREAKER_FAILURES": failures}
		r, err := l.row(ctx, x, label, n, env, false, func(c *Cluster, r *Row) error {
			if res := get(ctx, c.Bases()[0], "/products/1"); res.Status != 200 {
				return fmt.Errorf("prime: status %d %s", res.Status, res.Err)
			}
			if err := sleepCtx(ctx, 1200*time.Millisecond); err != nil {
				return err
			}
			l.dbProxy.SetDown(true)
			u := 0
			targets := spread(c.Bases(), total, func(k int) string {
				if k%10 == 0 {
					return "/products/1"
				}
				u++
				return fmt.Sprintf("/products/%d", 101+u%uncached)
			})
			l.phase(r, "outage", func() ([]Result, time.Duration) { return Paced(ctx, targets, rate) })
			r.Figures["refused_by_breaker"] = scrapeSum(ctx, c.Bases())[`stampede_db_pool_refused_total{pool="main",reason="circuit_open"}`]
			l.dbProxy.SetDown(false)
			return nil
		})
		if p := r.phase("outage"); p != nil {
			b := p.Load
			attempts[failures] = p.DBLink.Attempts()
			failP99[failures] = b.FailP99Ms
			x.Table = append(x.Table, []string{label, itoa(b.OK), itoa(b.XCache["STALE"]), failedCell(b), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
				fmtMs(b.FailP99Ms), itoa(p.DBLink.Attempts()), fnum(r.Figures["refused_by_breaker"])})
			x.check(b.XCache["STALE"] >= total/10, "breaker %s: %d stale answers for the %d requests of the cached id", failures, b.XCache["STALE"], total/10)
		}
		if err != nil {
			return x.fail(err)
		}
	}
	x.check(attempts["5"]*5 < attempts["1000000"], "the breaker cuts the attempts on the dead link: %d vs %d without", attempts["5"], attempts["1000000"])
	x.note("the dead link resets each connection at once, so a failure is quick with or without the breaker (failures' p99 %s "+
		"with, %s without; the tail is this machine's queueing); what the breaker saves is the database: %d connection "+
		"attempts instead of %d", fmtMs(failP99["5"]), fmtMs(failP99["1000000"]), attempts["5"], attempts["1000000"])
	return x
}

// ---- 5. overload -------------------------------------------------------------------

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
		env := map[string]string{"DB_MAIN_MAX_CONNS": "2", "SHED_MAX_WAITING": limit}
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

// ---- 6. Redis down ---------------------------------------------------------------

func (l *Lab) redisDown(ctx context.Context) *Experiment {
	n := l.instances
	const per = 50
	x := &Experiment{Name: "redis-down", Title: "Redis goes away, then comes back",
		Setup: fmt.Sprintf("%d instances, CACHE_MODE=swr, Redis reached through a proxy, %s on the DB link; the Redis link "+
			"refuses everything, %d×%d concurrent GET /products/1; then Redis returns: one GET per instance every 100 ms "+
			"until each has answered HIT; then %d×%d concurrent GETs again", n, l.delay, n, per, n, per),
		Expect: fmt.Sprintf("while Redis is down every request is still answered from PostgreSQL, with at most %d×%d "+
			"(instances × MaxDirectLoads) queries; once it is back the key is cached again and a burst costs no query", n, maxDirectLoads),
		Columns: []string{"phase", "requests", "ok", "X-Cache", "p50", "p99", "DB queries", "Redis link attempts"}}
	r, err := l.row(ctx, x, "redis down and back", n, map[string]string{"CACHE_MODE": "swr"}, true, func(c *Cluster, r *Row) error {
		l.dbProxy.SetDelay(l.delay)
		l.redisProxy.SetDown(true)
		l.phase(r, "redis down", func() ([]Result, time.Duration) {
			return Burst(ctx, spread(c.Bases(), n*per, samePath("/products/1")))
		})
		l.redisProxy.SetDown(false)
		var recoverErr error
		l.phase(r, "recovery", func() ([]Result, time.Duration) {
			var rs []Result
			t0 := time.Now()
			hit := map[int]bool{}
			for len(hit) < n {
				if time.Since(t0) > 30*time.Second {
					recoverErr = fmt.Errorf("only %d of %d instances answered HIT within 30 s of Redis' return", len(hit), n)
					break
				}
				round := make([]Result, n)
				var wg sync.WaitGroup
				for i, base := range c.Bases() {
					wg.Go(func() { round[i] = get(ctx, base, "/products/1") })
				}
				wg.Wait()
				for i, res := range round {
					if res.XCache == "HIT" {
						hit[i] = true
					}
				}
				rs = append(rs, round...)
				if sleepCtx(ctx, 100*time.Millisecond) != nil {
					break
				}
			}
			r.Figures["recovery_seconds"] = time.Since(t0).Seconds()
			return rs, time.Since(t0)
		})
		l.phase(r, "redis back", func() ([]Result, time.Duration) {
			return Burst(ctx, spread(c.Bases(), n*per, samePath("/products/1")))
		})
		return recoverErr
	})
	for _, p := range r.Phases {
		b := p.Load
		redisAttempts := "0"
		if p.RedisLink != nil {
			redisAttempts = itoa(p.RedisLink.Attempts())
		}
		label := p.Name
		if p.Name == "recovery" {
			label = fmt.Sprintf("recovery (%.1f s)", r.Figures["recovery_seconds"])
		}
		x.Table = append(x.Table, []string{label, itoa(b.Requests), itoa(b.OK), statusSummary(b.XCache), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
			itoa(p.DBLink.Executes), redisAttempts})
	}
	if rec := r.phase("recovery"); rec != nil && rec.Load.XCache["MISS"] > 0 {
		x.note("until each instance's Redis breaker half-opens (BREAKER_OPEN_TIMEOUT, 5 s by default) it keeps bypassing the "+
			"returned Redis: %d recovery GETs were MISS, %d of them a direct database query each, before the first HIT",
			rec.Load.XCache["MISS"], rec.DBLink.Executes)
	}
	if down, back := r.phase("redis down"), r.phase("redis back"); down != nil && back != nil {
		x.check(down.Load.OK == down.Load.Requests, "Redis down: %d/%d answered", down.Load.OK, down.Load.Requests)
		x.check(down.DBLink.Executes <= int64(n*maxDirectLoads), "Redis down: %d queries (want ≤ %d)", down.DBLink.Executes, n*maxDirectLoads)
		x.check(back.Load.XCache["HIT"] == back.Load.Requests && back.DBLink.Executes == 0,
			"Redis back: %d/%d HIT, %d queries (want all HIT, 0)", back.Load.XCache["HIT"], back.Load.Requests, back.DBLink.Executes)
	}
	return x.fail(err)
}

// ---- formatting ------------------------------------------------------------------

func itoa[T int | int64](v T) string { return fmt.Sprint(v) }

func fnum(v float64) string { return format(v) }

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.0fms", v)
}

// failedCell is the failure count with its statuses: "0" or "12 (503×12)".
func failedCell(b *LoadStats) string {
	if b.Failed == 0 {
		return "0"
	}
	m := map[string]int{}
	for k, v := range b.ByStatus {
		if !strings.HasPrefix(k, "2") {
			m[k] = v
		}
	}
	return fmt.Sprintf("%d (%s)", b.Failed, statusSummary(m))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func plural(n int64, format string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, n)
}

// slug turns a row label into a file-name part.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
