package main

import (
	"net/http"
	"time"
)

// failoverStats is what the failover experiment's clients saw.
type failoverStats struct {
	keys, attempts int
	// window* count the reads of hot keys sent between the kill and the
	// first order the new primary took (the end of the run if none).
	window200, window503, windowOther int
	status500, other5xx               int // every request, reads and order attempts
	killToOrder, promoteToOrder       time.Duration
	back                              bool
	createdAfter                      int // 201s answered after the promotion
}

func summarizeFailover(f *failoverLoad, killed, promoted, first time.Time) failoverStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := failoverStats{keys: f.keys, attempts: len(f.orders), killToOrder: -1, promoteToOrder: -1, back: !first.IsZero()}
	if s.back {
		s.killToOrder, s.promoteToOrder = first.Sub(killed), first.Sub(promoted)
	}
	for _, a := range f.reads {
		if !a.sent.Before(killed) && (first.IsZero() || a.sent.Before(first)) {
			switch a.status {
			case http.StatusOK:
				s.window200++
			case http.StatusServiceUnavailable:
				s.window503++
			default:
				s.windowOther++
			}
		}
	}
	for _, a := range f.orders {
		if a.status == http.StatusCreated && a.done.After(promoted) {
			s.createdAfter++
		}
	}
	for _, as := range [][]answer{f.reads, f.orders} {
		for _, a := range as {
			switch {
			case a.status == http.StatusInternalServerError:
				s.status500++
			case a.status >= 500 && a.status != http.StatusServiceUnavailable:
				s.other5xx++
			}
		}
	}
	return s
}

// reportFailover writes the experiment's row, figures, checks and notes.
// m0 and m1 are the instances' metrics scraped just before the kill and
// once the first order after the promotion had succeeded; xacts is the
// new primary's transaction count from just before the kill to after the
// instances stopped.
func (l *Lab) reportFailover(x *Experiment, s failoverStats, oc orderCheck, m0, m1 map[string]float64,
	xacts int64, detect time.Duration,
) {
	delta := func(name string, labels ...string) float64 {
		return metricSum(m1, name, labels...) - metricSum(m0, name, labels...)
	}
	loads := delta("stampede_cache_loads_total")
	acquires := delta("stampede_db_pool_acquires_total", `pool="main"`)
	probes := delta("stampede_breaker_probes_total", `breaker="postgres_main"`)
	refused := delta("stampede_db_pool_refused_total", `pool="main"`)
	r := &Row{Label: "kill the primary, promote the replica", Figures: map[string]float64{
		"kill_to_order_ms": ms(s.killToOrder), "promotion_to_order_ms": ms(s.promoteToOrder),
		"orders": float64(s.keys), "created": float64(oc.Keys), "lost": float64(oc.Lost), "duplicated": float64(oc.Duplicated),
		"gave_up": float64(oc.GaveUp), "unconfirmed": float64(oc.Unconfirmed), "order_attempts": float64(s.attempts),
		"window_reads_200": float64(s.window200), "window_reads_503": float64(s.window503), "window_reads_other": float64(s.windowOther),
		"status_500": float64(s.status500), "other_5xx": float64(s.other5xx),
		"window_cache_loads": loads, "window_main_acquires": acquires, "window_probes": probes, "window_main_refused": refused,
		"new_primary_xacts": float64(xacts), "created_after_promotion": float64(s.createdAfter),
	}}
	x.Rows = append(x.Rows, r)
	promoteCell := "never"
	if s.back {
		promoteCell = fmtMs(ms(s.promoteToOrder)) // < 0: before pg_ctl promote returned
	}
	x.Table = append(x.Table, []string{fmtBack(s.killToOrder), promoteCell, itoa(s.keys), itoa(oc.Keys),
		itoa(oc.Lost), itoa(oc.Duplicated), itoa(oc.GaveUp), itoa(s.attempts), itoa(s.window200), itoa(s.window503),
		itoa(s.windowOther), itoa(s.status500), itoa(s.other5xx), fnum(loads), fnum(acquires), fnum(probes),
		itoa(xacts), itoa(s.createdAfter)})
	x.check(oc.Lost == 0 && oc.Duplicated == 0 && oc.GaveUp == 0 && oc.Unconfirmed == 0,
		"every 201 is one row on the new primary: %d lost, %d duplicated, %d given up, %d rows no client was told of (want 0 each)",
		oc.Lost, oc.Duplicated, oc.GaveUp, oc.Unconfirmed)
	x.check(s.status500 == 0, "%d answers 500 (want 0)", s.status500)
	x.check(s.back && s.promoteToOrder <= failoverBack, "first order on the new primary %s after the promotion (want ≤ %s)",
		promoteCell, failoverBack)
	x.check(s.window503+s.windowOther == 0, "cached reads during the window: %d × 200, %d × 503, %d other (want all 200)",
		s.window200, s.window503, s.windowOther)
	x.note("the replica was promoted %s after the primary was stopped (a managed database's detection, shortened); "+
		"\"window\" is from the stop to the first 201 of an order attempt sent after it", detect.Round(time.Millisecond))
	x.note("queries it cost, from the instances' /metrics over the window: %s cache loads (reads that went to the database), "+
		"%s main-pool acquires, %s breaker probes, %s calls refused by the main pool without touching the database",
		fnum(loads), fnum(acquires), fnum(probes), fnum(refused))
	x.note("\"xacts on new primary\" is pg_stat_database xact_commit + xact_rollback of the app's database on the replica, " +
		"from just before the stop until after the instances exited (so every backend had flushed its counters): the app's " +
		"statements and its pools' health checks (reports pool and probes on the replica before the promotion, everything after), " +
		"none of the lab's own; \"orders after promotion\" are the 201s answered after it. pg_stat_statements is not loaded " +
		"on these servers, so queries are counted as transactions")
}
