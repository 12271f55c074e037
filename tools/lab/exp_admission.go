package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// admission is the sustained overload: four times what the main pool can
// serve, for admissionFor, on uncached reads with a trickle of orders, under
// three ways of admitting work to the pool's queue.
func (l *Lab) admission(ctx context.Context) *Experiment {
	const conns, linkDelay = 4, 20 * time.Millisecond
	x := &Experiment{Name: "admission", Title: "sustained 4× overload: no shedding vs a fixed queue vs deadline admission",
		Setup: fmt.Sprintf("1 instance, DB_MAIN_MAX_CONNS=%d, +%s on the DB link; 10 orders/s (POST /orders) throughout; "+
			"read capacity measured with %d closed-loop workers, then 4× that rate of uncached GET /products?limit=5&after=… for %s",
			conns, linkDelay, 2*conns, admissionFor),
		Expect: "goodput ≥ 1.0× capacity, ≥ 99.9 % of orders succeed, p99 of good answers ≤ 200 ms with deadline admission and no " +
			"shedding setting tuned; without shedding the queue grows until answers come too late",
		Columns: []string{"admission", "capacity/s", "goodput", "orders ok", "p99 of 200s", "refused", "refusals' p99", "timeouts/errors"}}
	rows := []struct{ label, admission, maxWaiting string }{
		{"none (queue only, SHED_MAX_WAITING=100000)", "queue", "100000"},
		{"fixed queue (SHED_MAX_WAITING=20)", "queue", "20"},
		{"deadline (ADMISSION=deadline, defaults)", "deadline", ""},
	}
	for _, row := range rows {
		env := map[string]string{"DB_MAIN_MAX_CONNS": fmt.Sprint(conns), "ADMISSION": row.admission, "DB_CHECKOUT_RESERVED": "1"}
		if row.maxWaiting != "" {
			env["SHED_MAX_WAITING"] = row.maxWaiting
		}
		var st admissionStats
		_, err := l.row(ctx, x, row.label, 1, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(linkDelay)
			defer l.dbProxy.SetDelay(0)
			st = runAdmission(ctx, c.Bases()[0], conns)
			return nil
		})
		if err != nil {
			return x.fail(err)
		}
		x.Table = append(x.Table, []string{row.label, fnum(st.capacity), fmt.Sprintf("%.2f×", st.goodput/st.capacity),
			fmt.Sprintf("%d/%d", st.ordersOK, st.orders), fmtMs(st.p99Good), itoa(st.refused), fmtMs(st.p99Refused), itoa(st.failed)})
		if row.admission == "deadline" {
			x.check(st.goodput >= 0.95*st.capacity, "deadline admission: goodput %.2f× capacity (want ≈ 1.0×)", st.goodput/st.capacity)
			x.check(st.ordersOK*1000 >= st.orders*999, "deadline admission: %d of %d orders succeeded (want ≥ 99.9 %%)", st.ordersOK, st.orders)
			x.check(st.p99Good <= 200, "deadline admission: p99 of good answers %s (want ≤ 200 ms)", fmtMs(st.p99Good))
		}
	}
	return x
}

// admissionFor is how long the overload lasts.
const admissionFor = 20 * time.Second

type admissionStats struct {
	capacity, goodput   float64 // per second
	orders, ordersOK    int
	refused, failed     int
	p99Good, p99Refused float64 // ms
}

// runAdmission measures capacity with 2 × conns closed-loop workers (so a
// connection never waits for the next request), then offers 4× it
// open-loop. Orders run through both: they hold a connection of their own
// (DB_CHECKOUT_RESERVED) for several round trips each, so capacity is what
// is left for reads while they run, the same in both phases.
func runAdmission(ctx context.Context, base string, conns int) admissionStats {
	var next atomic.Int64
	next.Store(1)
	// Lists are never cached: every request needs a connection.
	path := func(int) string { return fmt.Sprintf("/products?limit=5&after=%d", next.Add(1)%990) }
	var wg sync.WaitGroup
	var orders, ordersOK atomic.Int64
	// Only orders sent during the overload count, each by the phase it
	// was sent in: resetting the counters at the switch let an order sent
	// before it count as a success after it (201 of 200).
	var overload atomic.Bool
	octx, stopOrders := context.WithCancel(ctx)
	wg.Go(func() { // 10 orders a second, each its own request
		hc := &http.Client{Timeout: 15 * time.Second}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var inflight sync.WaitGroup
		defer inflight.Wait()
		for {
			select {
			case <-octx.Done():
				return
			case <-t.C:
			}
			counted := overload.Load()
			if counted {
				orders.Add(1)
			}
			inflight.Go(func() {
				resp, err := hc.Post(base+"/orders", "application/json", strings.NewReader(`{"product_id":7,"quantity":1}`))
				if err == nil {
					_ = resp.Body.Close()
					if counted && resp.StatusCode == http.StatusCreated {
						ordersOK.Add(1)
					}
				}
			})
		}
	})
	// Capacity: closed-loop workers, each one request at a time, for 3 s.
	calib := make([]Target, 0, 4096)
	for range cap(calib) {
		calib = append(calib, Target{Base: base, Path: path(0)})
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	rs, wall := Stream(cctx, calib, 2*conns)
	cancel()
	ok := 0
	for _, r := range rs {
		if r.Status == http.StatusOK {
			ok++
		}
	}
	st := admissionStats{capacity: float64(ok) / wall.Seconds()}
	rate := 4 * st.capacity
	n := int(rate * admissionFor.Seconds())
	targets := make([]Target, n)
	for i := range targets {
		targets[i] = Target{Base: base, Path: path(i)}
	}
	overload.Store(true)
	rs, wall = Paced(ctx, targets, rate)
	stopOrders()
	wg.Wait()
	var good, refused []float64
	for _, r := range rs {
		switch {
		case r.Status == http.StatusOK:
			good = append(good, float64(r.Latency)/float64(time.Millisecond))
		case r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests:
			refused = append(refused, float64(r.Latency)/float64(time.Millisecond))
		default:
			st.failed++
		}
	}
	st.goodput = float64(len(good)) / wall.Seconds()
	st.refused = len(refused)
	st.p99Good, st.p99Refused = p99(good), p99(refused)
	st.orders, st.ordersOK = int(orders.Load()), int(ordersOK.Load())
	return st
}

func p99(ms []float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	slices.Sort(ms)
	return ms[min(len(ms)-1, len(ms)*99/100)]
}
