package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// blipRuns is how many times the db-blip experiment repeats the new
// schedule: the claim is "recovers within 1 s of the database" on each.
const blipRuns = 3

// dbBlip is experiment 5: a 2 s database blip under steady load of cold
// reads and orders. How long after the link returns do both succeed again?
// Once with the old fixed open time (BREAKER_OPEN_MIN = MAX = 5 s), then
// blipRuns times with the default schedule (375 ms, doubling to 30 s).
func (l *Lab) dbBlip(ctx context.Context) *Experiment {
	n := l.instances
	const rate, before, cut, after = 100.0, time.Second, 2 * time.Second, 5 * time.Second
	x := &Experiment{Name: "db-blip", Title: "a 2 s database blip under load: how soon after the database do requests succeed?",
		Setup: fmt.Sprintf("%d instances, CACHE_MODE=swr; open loop at %.0f/s over the instances, half GET of never-read "+
			"products (cold reads), half POST /orders; after %s the DB link is cut for %s, then %s more", n, rate, before, cut, after),
		Expect: "with the fixed open time the breaker stays open for it (5 s) whatever the blip; with the adaptive " +
			"schedule its probes come ~0.4, 1.1 and 2.6 s after opening (BREAKER_OPEN_MIN 375 ms, doubling), so on every " +
			"instance cold reads and orders succeed again within 1 s of the database",
		Columns: []string{"breaker", "run", "requests", "failed during cut", "cold reads back after", "orders back after",
			"failures after back", "last failure after back", "probes (all instances)"}}
	rows := []struct {
		label string
		env   map[string]string
	}{{"fixed 5 s open time (BREAKER_OPEN_MIN=MAX=5s)", map[string]string{"BREAKER_OPEN_MIN": "5s", "BREAKER_OPEN_MAX": "5s"}}}
	for range blipRuns {
		rows = append(rows, struct {
			label string
			env   map[string]string
		}{"adaptive (375 ms → 30 s)", map[string]string{}})
	}
	for i, row := range rows {
		env := map[string]string{"CACHE_MODE": "swr"}
		for k, v := range row.env {
			env[k] = v
		}
		label := fmt.Sprintf("%s #%d", row.label, i)
		_, err := l.row(ctx, x, label, n, env, false, func(c *Cluster, r *Row) error {
			bs := runBlip(ctx, c.Bases(), rate, before, cut, after, l.dbProxy.SetDown)
			m := scrapeSum(ctx, c.Bases())
			probes := m[`stampede_breaker_probes_total{breaker="postgres_main"}`]
			x.Table = append(x.Table, []string{row.label, itoa(i), itoa(bs.requests), itoa(bs.failedInCut),
				fmtBack(bs.readsBack), fmtBack(bs.ordersBack), itoa(bs.failedAfter), fmtBack(bs.lastFailure), fnum(probes)})
			r.Figures["reads_back_ms"] = ms(bs.readsBack)
			r.Figures["orders_back_ms"] = ms(bs.ordersBack)
			r.Figures["last_failure_ms"] = ms(bs.lastFailure)
			if row.env["BREAKER_OPEN_MIN"] == "" {
				x.check(bs.readsBack >= 0 && bs.ordersBack >= 0 && bs.lastFailure <= time.Second,
					"run %d: cold reads back %s, orders back %s, last failure %s after the database (want ≤ 1 s)",
					i, fmtBack(bs.readsBack), fmtBack(bs.ordersBack), fmtBack(bs.lastFailure))
			}
			return nil
		})
		if err != nil {
			return x.fail(err)
		}
	}
	x.note("\"back after\" is from the moment the link returned to the end of the first request of that kind, sent " +
		"after it, that succeeded; \"failures after back\" counts requests of either kind sent after both had succeeded that still failed (instances whose breaker had not probed yet), and the last " +
		"of them ended \"last failure after back\"")
	return x
}

// blipStats is what one blip run saw.
type blipStats struct {
	requests, failedInCut, failedAfter int
	readsBack, ordersBack              time.Duration // -1: never
	lastFailure                        time.Duration // end of the last failure sent after the link returned; 0: none
}

func fmtBack(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmtMs(ms(d))
}

// blipResult is one request of a blip run.
type blipResult struct {
	order      bool
	sent, done time.Time
	ok         bool
}

// runBlip sends cold reads and orders at rate for before+cut+after, cutting
// the link (setDown) for cut after before.
func runBlip(ctx context.Context, bases []string, rate float64, before, cut, after time.Duration, setDown func(bool)) blipStats {
	client := newClient(64)
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var results []blipResult
	var wg sync.WaitGroup
	t0 := time.Now()
	var cutAt, backAt time.Time
	total := int((before + cut + after).Seconds() * rate)
	for i := range total {
		at := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if sleepCtx(ctx, time.Until(at)) != nil {
			break
		}
		if cutAt.IsZero() && time.Since(t0) >= before {
			setDown(true)
			cutAt = time.Now()
		}
		if backAt.IsZero() && !cutAt.IsZero() && time.Since(cutAt) >= cut {
			setDown(false)
			backAt = time.Now()
		}
		base, order, id := bases[i%len(bases)], i%2 == 1, 1+i/2%1000 // each read id once per run
		wg.Go(func() {
			res := blipResult{order: order, sent: time.Now()}
			res.ok = blipRequest(ctx, client, base, order, id)
			res.done = time.Now()
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
		})
	}
	wg.Wait()
	setDown(false)
	return summarizeBlip(results, cutAt, backAt)
}

func summarizeBlip(results []blipResult, cutAt, backAt time.Time) blipStats {
	slices.SortFunc(results, func(a, b blipResult) int { return a.sent.Compare(b.sent) })
	s := blipStats{requests: len(results), readsBack: -1, ordersBack: -1}
	var recovered time.Time
	for _, r := range results {
		switch {
		case r.sent.Before(cutAt):
		case r.sent.Before(backAt):
			if !r.ok {
				s.failedInCut++
			}
		case r.ok:
			back := &s.readsBack
			if r.order {
				back = &s.ordersBack
			}
			if *back < 0 || r.done.Sub(backAt) < *back {
				*back = r.done.Sub(backAt)
			}
			if s.readsBack >= 0 && s.ordersBack >= 0 && recovered.IsZero() {
				recovered = r.sent
			}
		}
	}
	for _, r := range results {
		if !recovered.IsZero() && r.sent.After(recovered) && !r.ok {
			s.failedAfter++
		}
		if !r.ok && !r.sent.Before(backAt) {
			s.lastFailure = max(s.lastFailure, r.done.Sub(backAt))
		}
	}
	return s
}

// blipRequest sends one cold read or one order and reports a 2xx.
func blipRequest(ctx context.Context, client *http.Client, base string, order bool, id int) bool {
	method, path, body := http.MethodGet, fmt.Sprintf("/products/%d", id), io.Reader(nil)
	if order {
		method, path = http.MethodPost, "/orders"
		body = bytes.NewReader(fmt.Appendf(nil, `{"product_id":%d,"quantity":1}`, id))
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}
