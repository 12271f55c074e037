package main

import (
	"fmt"
	"math"
	"slices"
)

// The soak's levelling-off rules, applied to the second half of the run to
// each instance's life (a restarted instance starts a new one) from its
// first minute on (a new process grows its heap and fills its caches for
// that long), when that leaves samples spanning a quarter of the run.
//
//   - RSS: the growth its Theil–Sen slope predicts over those samples
//     stays within max(rssGrowthFloor, rssSlopeMax × their span). A Go heap
//     that has found its size sits flat apart from GC sawtooth; a leak of
//     200 bytes per request at the soak's 200 requests a second is 2.3 MiB
//     a minute, over the bound, and 70 MiB in half an hour. The floor is for
//     short runs: RSS only ratchets up to the peak of the worst fault so
//     far (Go returns freed pages slowly), and a 3-minute run meets each
//     fault for the first time until its end (a 2-minute run on this
//     machine stepped 64 → 73 MiB with the last faults, then stayed flat).
//     So a short run only catches a leak faster than the floor per half
//     run; the 30-minute run, whose second half sees every fault again, is
//     the one held to 2 MiB a minute.
//   - goroutines and open fds (less the load generator's connections to
//     the instance and net/http's goroutine for each, which its idle pool
//     keeps for 30 s after a fault made it open more: a 3-minute CI run
//     beside CPU burners ended 16 s after its last fault 30 fds up that
//     way): the growth the slope predicts stays within a band of
//     max(bandFloor, bandShare × the median). Both swing with the
//     requests in flight at the moment of the sample (faults hold requests
//     for up to REQUEST_TIMEOUT), which the median-based slope ignores; a
//     leak of one goroutine or socket per fault, or per few thousand
//     requests, climbs out of the band.
//
// Theil–Sen (the median of the slopes between every pair of samples)
// rather than least squares: one sample taken mid-fault, when RSS or
// goroutines spike and fall back, moves a least-squares line but not the
// median of pairwise slopes.
const (
	rssSlopeMax    = 2.0  // MiB per minute
	rssGrowthFloor = 12.0 // MiB over the judged samples
	bandFloor      = 20.0
	bandShare      = 0.25
	lifeWarmup     = 1.0 // minutes
	minPoints      = 4   // samples of a life in the second half for a slope
)

// point is one sample of one instance: minutes since the soak began.
type point struct{ T, V float64 }

// theilSen is the median of the slopes between every pair of points with
// different times (per minute); 0 with fewer than two.
func theilSen(ps []point) float64 {
	var slopes []float64
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if dt := ps[j].T - ps[i].T; dt != 0 {
				slopes = append(slopes, (ps[j].V-ps[i].V)/dt)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}

func median(ps []point) float64 {
	vs := make([]float64, len(ps))
	for i, p := range ps {
		vs[i] = p.V
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return math.NaN()
	}
	return vs[len(vs)/2]
}

// life is one instance process's samples of one measure.
type life struct {
	Name   string // "instance 1" or "instance 1 (restart 2)"
	Points []point
}

// secondHalf keeps the points at or after half of total minutes and at
// least lifeWarmup after the life's first, or nil when too few are left
// for a slope.
func secondHalf(ps []point, total float64) []point {
	var out []point
	for _, p := range ps {
		if p.T >= total/2 && p.T >= ps[0].T+lifeWarmup && !math.IsNaN(p.V) {
			out = append(out, p)
		}
	}
	if len(out) < minPoints || out[len(out)-1].T-out[0].T < total/4 {
		return nil
	}
	return out
}

// soakOutcome is everything the verdict judges.
type soakOutcome struct {
	Minutes      float64
	ServerErrors int // 5xx other than 503 (the overload contract) and a write's "outcome unknown" 504
	Unanswered   int // no answer within REQUEST_TIMEOUT + margin, or a live instance's connection cut
	Lost         int // a 201's id with no such order in PostgreSQL
	Duplicated   int // an idempotency key answered with two ids, or stored twice
	RSS, Gor, FD []life
}

// verdict lists every rule the outcome breaks; none means it passed.
func verdict(o soakOutcome) []string {
	var fails []string
	add := func(bad bool, f string, a ...any) {
		if bad {
			fails = append(fails, fmt.Sprintf(f, a...))
		}
	}
	add(o.ServerErrors > 0, "%d answers were 5xx other than 503 (and a write's outcome-unknown 504)", o.ServerErrors)
	add(o.Unanswered > 0, "%d requests went unanswered past their deadline or were cut by a live instance", o.Unanswered)
	add(o.Lost > 0, "%d orders told 201 are not in PostgreSQL", o.Lost)
	add(o.Duplicated > 0, "%d idempotency keys produced more than one order", o.Duplicated)
	judged := 0
	for _, l := range o.RSS {
		ps := secondHalf(l.Points, o.Minutes)
		if ps == nil {
			continue
		}
		judged++
		span := ps[len(ps)-1].T - ps[0].T
		s := theilSen(ps)
		bound := max(rssGrowthFloor, rssSlopeMax*span)
		add(s*span > bound, "%s: RSS still climbing in the second half: %.2f MiB/min, %.1f MiB over %.1f min (bound %.0f MiB)",
			l.Name, s, s*span, span, bound)
	}
	add(judged == 0 && len(o.RSS) > 0, "no instance lived through enough of the second half to judge its RSS")
	for _, m := range []struct {
		what  string
		lives []life
	}{{"goroutines", o.Gor}, {"open fds", o.FD}} {
		for _, l := range m.lives {
			ps := secondHalf(l.Points, o.Minutes)
			if ps == nil {
				continue
			}
			growth := theilSen(ps) * (ps[len(ps)-1].T - ps[0].T)
			band := max(bandFloor, bandShare*median(ps))
			add(growth > band, "%s: %s grew %.0f over the second half (band %.0f)", l.Name, m.what, growth, band)
		}
	}
	return fails
}
