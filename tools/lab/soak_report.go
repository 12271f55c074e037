package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// write prints the per-minute table, the totals and the verdict, and
// writes soak.json and soak.svg into dir.
func (r *soakReport) write(w io.Writer, dir string) error {
	r.printTable(w)
	t := totals(r.Mins)
	fmt.Fprintf(w, "\ntotal: %d requests, %d 2xx, answers by status %s, %d unanswered, %d cut by a SIGKILL (expected), max latency %s\n",
		t.Requests, t.OK, statusSummary(t.Status), t.Unanswered, t.Cut, fmtMs(t.MaxMs))
	causes := slices.Sorted(maps.Keys(t.Causes))
	slices.SortStableFunc(causes, func(a, b string) int { return t.Causes[b] - t.Causes[a] })
	for _, k := range causes {
		fmt.Fprintf(w, "  %6d × %s\n", t.Causes[k], k)
	}
	o := r.Orders
	fmt.Fprintf(w, "orders: %d keys answered 201 (%d replays of the same key), %d lost, %d duplicated; "+
		"%d clients gave up without a 201, %d orders committed whose client never saw its 201\n",
		o.Keys, o.Replays, o.Lost, o.Duplicated, o.GaveUp, o.Unconfirmed)
	if len(r.Verdict) == 0 {
		fmt.Fprintf(w, "verdict: PASS (no 5xx but 503 and a write's outcome-unknown 504, no unanswered request, no lost or duplicated order; in the second half "+
			"RSS grew less than max(%.0f MiB, %.0f MiB/min), goroutines and fds less than max(%.0f, %.0f%% of the median))\n",
			rssGrowthFloor, rssSlopeMax, bandFloor, bandShare*100)
	} else {
		fmt.Fprintln(w, "verdict: FAIL")
		for _, f := range r.Verdict {
			fmt.Fprintln(w, "  -", f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "soak.svg"))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := writeSoakChart(f, r); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s, %s\n", filepath.Join(dir, "soak.json"), filepath.Join(dir, "soak.svg"))
	return f.Close()
}

// printTable prints one Markdown row a minute.
func (r *soakReport) printTable(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| min | requests | 2xx | 4xx | 503 | other 5xx | unanswered | cut by kill | p99 ms | faults begun | RSS MiB | RSS slope MiB/min | goroutines | open fds | pool conns | Redis conns |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for m, st := range r.Mins {
		in := r.minuteSamples(m)
		four := 0
		for k, v := range st.Status {
			if strings.HasPrefix(k, "4") {
				four += v
			}
		}
		fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			m+1, st.Requests, st.OK, four, st.Status["503"], st.ServerErr, st.Unanswered, st.Cut, fmtMs(st.P99Ms),
			r.faultsIn(m), perInst(in, func(s instSample) float64 { return float64(s.RSSMiB) }, "%.0f"),
			r.rssSlopes(m), perInst(in, func(s instSample) float64 { return float64(s.Goroutines) }, "%.0f"),
			perInst(in, func(s instSample) float64 { return float64(s.FDs) }, "%.0f"),
			perInst(in, func(s instSample) float64 { return float64(s.PoolConns) }, "%.0f"),
			perInst(in, func(s instSample) float64 { return float64(s.RedisConns) }, "%.0f"))
	}
}

// minuteSamples is the last sample taken in minute m (0-based), per instance.
func (r *soakReport) minuteSamples(m int) []instSample {
	var last []instSample
	for _, s := range r.Samples {
		if s.AtMin >= float64(m) && s.AtMin < float64(m+1) {
			last = s.Inst
		}
	}
	return last
}

// rssSlopes is each instance's RSS slope over minute m's samples.
func (r *soakReport) rssSlopes(m int) string {
	var per [soakInstances][]point
	for _, s := range r.Samples {
		if s.AtMin < float64(m) || s.AtMin >= float64(m+1) {
			continue
		}
		for i, in := range s.Inst {
			if i < soakInstances && !math.IsNaN(float64(in.RSSMiB)) {
				per[i] = append(per[i], point{s.AtMin, float64(in.RSSMiB)})
			}
		}
	}
	parts := make([]string, soakInstances)
	for i, ps := range per {
		parts[i] = "–"
		if len(ps) >= 2 {
			parts[i] = fmt.Sprintf("%+.1f", theilSen(ps))
		}
	}
	return strings.Join(parts, "/")
}

func (r *soakReport) faultsIn(m int) string {
	var names []string
	for _, e := range r.Faults {
		if e.AtMin >= float64(m) && e.AtMin < float64(m+1) {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return "–"
	}
	return strings.Join(names, ", ")
}

// perInst prints one figure per instance, "a/b/c", "–" where unread.
func perInst(in []instSample, f func(instSample) float64, format string) string {
	if len(in) == 0 {
		return "–"
	}
	parts := make([]string, len(in))
	for i, s := range in {
		if v := f(s); math.IsNaN(v) {
			parts[i] = "–"
		} else {
			parts[i] = fmt.Sprintf(format, v)
		}
	}
	return strings.Join(parts, "/")
}
