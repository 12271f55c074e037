package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// maxDirectLoads is cache.Config.MaxDirectLoads' default: the most loads
// one instance runs at once while Redis is unusable.
const maxDirectLoads = 8

// dbDown is experiment 4: the database link refuses everything, with and
// without the circuit breaker.
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
			sum := scrapeSum(ctx, c.Bases())
			r.Figures["refused_by_breaker"] = sum[`stampede_db_pool_refused_total{pool="main",reason="circuit_open"}`]
			r.Figures["probes"] = sum[`stampede_breaker_probes_total{breaker="postgres_main"}`]
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
	if r := x.Rows[len(x.Rows)-1]; r.Figures["probes"] > 0 {
		// BREAKER_OPEN_MIN (375 ms) doubling: probes ~0.4, 1.1, 2.6 s after opening.
		x.note("probe schedule: while the link was down each instance's breaker ran %.1f health probes (SELECT 1) "+
			"in the %.0f s outage, at ~1, 3, 7… × BREAKER_OPEN_MIN after opening, instead of admitting user requests",
			r.Figures["probes"]/float64(n), float64(total)/rate)
	}
	x.check(attempts["5"]*5 < attempts["1000000"], "the breaker cuts the attempts on the dead link: %d vs %d without", attempts["5"], attempts["1000000"])
	x.note("the dead link resets each connection at once, so a failure is quick with or without the breaker (failures' p99 %s "+
		"with, %s without; the tail is this machine's queueing); what the breaker saves is the database: %d connection "+
		"attempts instead of %d", fmtMs(failP99["5"]), fmtMs(failP99["1000000"]), attempts["5"], attempts["1000000"])
	return x
}

// redisDown is experiment 6: Redis goes away under load, then comes back.
func (l *Lab) redisDown(ctx context.Context) *Experiment {
	n := l.instances
	const per = 50
	x := &Experiment{Name: "redis-down", Title: "Redis goes away, then comes back",
		Setup: fmt.Sprintf("%d instances, CACHE_MODE=swr, L1_TTL=1s and L1_OUTAGE_TTL=30s (the defaults), Redis reached "+
			"through a proxy, %s on the DB link; the Redis link refuses everything, %d×%d concurrent GET /products/1; then "+
			"Redis returns: one GET per instance every 100 ms until each has answered HIT, its Redis breaker reports "+
			"closed and the key is in Redis again; then %d×%d concurrent GETs again. The recovery window is read from the instances' own logs: from the "+
			"moment the link was restored to the last instance's Redis breaker closing (the 100 ms polling is not in it)",
			n, l.delay, n, per, n, per),
		Expect: fmt.Sprintf("while Redis is down every request is still answered from PostgreSQL, with at most %d×%d "+
			"(instances × MaxDirectLoads) queries, in fact one per instance (single-flight, then the value held in L1); "+
			"during the recovery the held values answer until each breaker closes (< 1 s, ≤ 10 queries in all); "+
			"once it is back the key is cached again and a burst costs no query", n, maxDirectLoads),
		Columns: []string{"phase", "requests", "ok", "X-Cache", "p50", "p99", "DB queries", "Redis link attempts"}}
	env := map[string]string{"CACHE_MODE": "swr", "L1_TTL": "1s", "L1_OUTAGE_TTL": "30s"}
	var closed []time.Duration
	r, err := l.row(ctx, x, "redis down and back", n, env, true, func(c *Cluster, r *Row) error {
		l.dbProxy.SetDelay(l.delay)
		l.redisProxy.SetDown(true)
		l.phase(r, "redis down", func() ([]Result, time.Duration) {
			return Burst(ctx, spread(c.Bases(), n*per, samePath("/products/1")))
		})
		l.redisProxy.SetDown(false)
		restored := time.Now()
		var recoverErr error
		l.phase(r, "recovery", func() ([]Result, time.Duration) {
			var rs []Result
			t0 := time.Now()
			hit := map[int]bool{}
			// L1 answers HIT with the value held since the outage, so
			// recovery also waits for the key to be in Redis again: the
			// query that costs belongs to the recovery.
			stored := false
			for len(hit) < n || !stored {
				if time.Since(t0) > 30*time.Second {
					recoverErr = fmt.Errorf("only %d of %d instances answered HIT with a closed breaker within 30 s of Redis' return (key stored again: %t)",
						len(hit), n, stored)
					break
				}
				round := make([]Result, n)
				var wg sync.WaitGroup
				for i, base := range c.Bases() {
					wg.Go(func() { round[i] = get(ctx, base, "/products/1") })
				}
				wg.Wait()
				for i, res := range round {
					if res.XCache == "HIT" && redisBreakerClosed(ctx, c.Bases()[i]) {
						hit[i] = true
					}
				}
				rs = append(rs, round...)
				stored = l.rdb.Exists(ctx, "product:v1:{1}").Val() == 1
				if sleepCtx(ctx, 100*time.Millisecond) != nil {
					break
				}
			}
			r.Figures["recovery_poll_seconds"] = time.Since(t0).Seconds()
			return rs, time.Since(t0)
		})
		trs, err := c.breakerLog("redis")
		if err != nil {
			return errors.Join(recoverErr, fmt.Errorf("reading the instances' logs: %w", err))
		}
		closed = closedAfter(trs, restored)
		slowest := slices.Max(closed)
		if slices.Min(closed) < 0 {
			slowest = -1
		}
		r.Figures["recovery_seconds"] = slowest.Seconds()
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
		if p.Name == "recovery" && len(closed) > 0 {
			label = fmt.Sprintf("recovery: Redis breakers closed %s–%s after Redis returned (polled %.1f s)",
				fmtMs(ms(slices.Min(closed))), fmtMs(ms(slices.Max(closed))), r.Figures["recovery_poll_seconds"])
		}
		x.Table = append(x.Table, []string{label, itoa(b.Requests), itoa(b.OK), statusSummary(b.XCache), fmtMs(b.P50Ms), fmtMs(b.P99Ms),
			itoa(p.DBLink.Executes), redisAttempts})
	}
	if rec := r.phase("recovery"); rec != nil && len(closed) > 0 {
		x.note("until each instance's Redis breaker probes Redis again (BREAKER_OPEN_MIN, doubling to BREAKER_OPEN_MAX) it keeps "+
			"bypassing the returned Redis, answering from the value it loaded during the outage (held in L1); the last breaker "+
			"closed %s after Redis returned, and the recovery cost %d database queries (the first read after closing finds "+
			"Redis empty for the key and loads it once, under the lock)", fmtMs(ms(slices.Max(closed))), rec.DBLink.Executes)
		x.check(slices.Min(closed) >= 0 && slices.Max(closed) < time.Second && rec.DBLink.Executes <= 10,
			"recovery: every Redis breaker closed within 1 s of Redis' return (slowest %s) at a cost of ≤ 10 queries (%d)",
			fmtMs(ms(slices.Max(closed))), rec.DBLink.Executes)
	}
	if down, back := r.phase("redis down"), r.phase("redis back"); down != nil && back != nil {
		x.check(down.Load.OK == down.Load.Requests, "Redis down: %d/%d answered", down.Load.OK, down.Load.Requests)
		x.check(down.DBLink.Executes <= int64(n*maxDirectLoads), "Redis down: %d queries (want ≤ %d)", down.DBLink.Executes, n*maxDirectLoads)
		x.check(back.Load.XCache["HIT"] == back.Load.Requests && back.DBLink.Executes == 0,
			"Redis back: %d/%d HIT, %d queries (want all HIT, 0)", back.Load.XCache["HIT"], back.Load.Requests, back.DBLink.Executes)
	}
	return x.fail(err)
}

// redisBreakerClosed reports whether the instance at base says its Redis
// breaker is closed (stampede_breaker_state 0).
func redisBreakerClosed(ctx context.Context, base string) bool {
	m, err := scrape(ctx, base, "stampede_breaker_state")
	if err != nil {
		return false
	}
	state, ok := m[`stampede_breaker_state{breaker="redis"}`]
	return ok && state == 0
}
