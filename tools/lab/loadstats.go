package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// LoadStats summarizes the results of one load.
type LoadStats struct {
	Requests   int            `json:"requests"`
	OK         int            `json:"ok"`     // 2xx
	Failed     int            `json:"failed"` // anything else, including no answer
	ByStatus   map[string]int `json:"by_status"`
	XCache     map[string]int `json:"x_cache,omitempty"`
	RetryAfter int            `json:"failed_with_retry_after"`
	Errors     map[string]int `json:"client_errors,omitempty"`
	P50Ms      float64        `json:"p50_ms"`
	P99Ms      float64        `json:"p99_ms"`
	MaxMs      float64        `json:"max_ms"`
	FailP99Ms  float64        `json:"failed_p99_ms"` // how long failures took to arrive
	WallMs     float64        `json:"wall_ms"`
}

// Summarize counts statuses and cache answers and computes latency
// percentiles over every request, failed ones included.
func Summarize(rs []Result, wall time.Duration) *LoadStats {
	s := &LoadStats{Requests: len(rs), ByStatus: map[string]int{}, XCache: map[string]int{}, Errors: map[string]int{}, WallMs: ms(wall)}
	all := make([]time.Duration, 0, len(rs))
	var failed []time.Duration
	for _, r := range rs {
		all = append(all, r.Latency)
		status := "no answer"
		if r.Status != 0 {
			status = strconv.Itoa(r.Status)
		}
		s.ByStatus[status]++
		if r.XCache != "" {
			s.XCache[r.XCache]++
		}
		if r.Err != "" {
			s.Errors[r.Err]++
		}
		if r.Status >= 200 && r.Status < 300 && r.Err == "" {
			s.OK++
			continue
		}
		s.Failed++
		failed = append(failed, r.Latency)
		if r.RetryAfter {
			s.RetryAfter++
		}
	}
	s.P50Ms = ms(percentile(all, 50))
	s.P99Ms = ms(percentile(all, 99))
	s.MaxMs = ms(percentile(all, 100))
	s.FailP99Ms = ms(percentile(failed, 99))
	return s
}

// percentile is the nearest-rank percentile (p in [0,100]) of ds: the
// smallest value with at least p% of the values at or below it. It is 0 for
// no values and does not modify ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

// statusSummary renders "200×950 503×50" in a stable order.
func statusSummary(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := ""
	for _, k := range keys {
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("%s×%d", k, m[k])
	}
	if out == "" {
		return "-"
	}
	return out
}

// medianBy is the element of xs (not empty) with the median key: the upper
// of the middle two for an even count, since it must be one of them.
func medianBy[T any](xs []T, key func(T) float64) T {
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[len(s)/2]
}

// rangeBy is the lowest and highest key of xs (not empty).
func rangeBy[T any](xs []T, key func(T) float64) (lo, hi float64) {
	lo, hi = key(xs[0]), key(xs[0])
	for _, x := range xs[1:] {
		lo, hi = min(lo, key(x)), max(hi, key(x))
	}
	return lo, hi
}
