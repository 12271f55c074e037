package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value, p50", ms(7), 50, 7 * time.Millisecond},
		{"one value, p0", ms(7), 0, 7 * time.Millisecond},
		{"unsorted p50 of 4 (nearest rank 2)", ms(40, 10, 30, 20), 50, 20 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(seq(1, 100)...), 99, 99 * time.Millisecond},
		{"p99 of 10 is the largest", ms(seq(1, 10)...), 99, 10 * time.Millisecond},
		{"p100 is the maximum", ms(3, 9, 1), 100, 9 * time.Millisecond},
		{"p50 of 1000 equal values", ms(repeat(5, 1000)...), 50, 5 * time.Millisecond},
		{"p out of range above", ms(1, 2), 150, 2 * time.Millisecond},
		{"p out of range below", ms(1, 2), -5, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			if got := percentile(tt.in, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) got %v, want %v", tt.in, tt.p, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("percentile modified its input: got %v, want %v", tt.in, in)
				}
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	rs := []Result{
		{Status: 200, XCache: "HIT", Latency: 10 * time.Millisecond},
		{Status: 200, XCache: "STALE", Latency: 20 * time.Millisecond},
		{Status: 503, RetryAfter: true, Latency: 30 * time.Millisecond},
		{Err: "client timeout", Latency: 10 * time.Second},
	}
	s := Summarize(rs, time.Second)
	got := []any{s.Requests, s.OK, s.Failed, s.RetryAfter, s.ByStatus["200"], s.ByStatus["503"], s.ByStatus["no answer"], s.XCache["HIT"], s.P50Ms, s.MaxMs}
	want := []any{4, 2, 2, 1, 2, 1, 1, 1, 20.0, 10000.0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Summarize field %d: got %v, want %v (all: %+v)", i, got[i], want[i], s)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {math.NaN(), 1}, {1, 1}, {0.7, 0.8}, {1.1, 1.2}, {3, 3}, {7, 8},
		{9.5, 10}, {1000, 1000}, {1001, 1200}, {2941.7, 3000}, {0.03, 0.03},
	}
	for _, tt := range tests {
		if got := niceCeil(tt.in); math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("niceCeil(%v) got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{0, "0"}, {1, "1"}, {12.54, "12.5"}, {0.25, "0.3"}, {99.96, "100"}, {1234.6, "1235"}, {1000, "1000"}}
	for _, tt := range tests {
		if got := format(tt.in); got != tt.want {
			t.Errorf("format(%v) got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// svgDoc is the part of a chart the test reads back.
type svgDoc struct {
	Rects []struct {
		Class  string  `xml:"class,attr"`
		Height float64 `xml:"height,attr"`
		Y      float64 `xml:"y,attr"`
		Title  string  `xml:"title"`
	} `xml:"rect"`
	Texts []string `xml:"text"`
}

func TestWriteBarChart(t *testing.T) {
	tests := []struct {
		name        string
		categories  []string
		series      []Series
		wantBars    int
		wantTallest string // title of the tallest bar
		wantText    []string
	}{
		{
			name:       "one series",
			categories: []string{"naive", "lock"},
			series:     []Series{{Name: "queries", Color: "red", Values: []float64{1000, 1}}},
			wantBars:   2, wantTallest: "naive queries: 1000", wantText: []string{"naive", "lock", "1000", "1"},
		},
		{
			name:       "two series, grouped",
			categories: []string{"a", "b", "c"},
			series: []Series{
				{Name: "p50", Color: "blue", Values: []float64{10, 20, 30}},
				{Name: "p99", Color: "orange", Values: []float64{15, 25, 300}},
			},
			wantBars: 6, wantTallest: "c p99: 300", wantText: []string{"p50", "p99", "300"},
		},
		{
			name:       "markup in names is escaped",
			categories: []string{"<naive & co>"},
			series:     []Series{{Name: `"q"`, Color: "red", Values: []float64{5}}},
			wantBars:   1, wantTallest: `<naive & co> "q": 5`, wantText: []string{"<naive & co>"},
		},
		{
			name:       "zero, NaN, negative and missing values draw flat bars",
			categories: []string{"a", "b", "c", "d"},
			series:     []Series{{Name: "s", Color: "red", Values: []float64{0, math.NaN(), -4}}},
			wantBars:   4, wantTallest: "a s: 0", wantText: []string{"0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeBarChart(&buf, "Title & <more>", "sub", "ms", tt.categories, tt.series); err != nil {
				t.Fatalf("writeBarChart: %v", err)
			}
			out := buf.String()
			if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
				t.Errorf("chart contains NaN or Inf:\n%s", out)
			}
			var doc svgDoc
			dec := xml.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("chart is not well-formed XML: %v\n%s", err, out)
			}
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if cd, ok := tok.(xml.CharData); err != nil || !ok || strings.TrimSpace(string(cd)) != "" {
					t.Fatalf("trailing content after </svg>: %v %v", tok, err)
				}
			}
			bars, tallest := 0, -1.0
			var tallestTitle string
			for _, r := range doc.Rects {
				if r.Class != "bar" {
					continue
				}
				bars++
				if r.Height < 0 || r.Y+r.Height > plotBottom+0.01 {
					t.Errorf("bar %q: y %v height %v, want within the plot above y=%d", r.Title, r.Y, r.Height, plotBottom)
				}
				if r.Height > tallest {
					tallest, tallestTitle = r.Height, r.Title
				}
			}
			if bars != tt.wantBars {
				t.Errorf("got %d bars, want %d", bars, tt.wantBars)
			}
			if tallestTitle != tt.wantTallest {
				t.Errorf("tallest bar got %q, want %q", tallestTitle, tt.wantTallest)
			}
			texts := strings.Join(doc.Texts, "\n")
			for _, w := range append(tt.wantText, "Title & <more>") {
				if !strings.Contains(texts, w) {
					t.Errorf("chart text got %q, want it to contain %q", texts, w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ in, want string }{
		{"naive", "naive"},
		{"watchdog true 5×200", "watchdog-true-5-200"},
		{"off (BREAKER_FAILURES=1000000)", "off-breaker-failures-1000000"},
		{"  --x--  ", "x"},
	}
	for _, tt := range tests {
		if got := slug(tt.in); got != tt.want {
			t.Errorf("slug(%q) got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestPairedRatio: the hot-key ratio pairs each round with the bare
// handler's round, so a round where the whole machine was slow does not
// count against the stack; a round with no bare throughput is left out.
func TestPairedRatio(t *testing.T) {
	rounds := func(rps ...float64) []hotKeyRound {
		out := make([]hotKeyRound, len(rps))
		for i, r := range rps {
			out[i].rps = r
		}
		return out
	}
	tests := []struct {
		name string
		a, b []hotKeyRound
		want float64
	}{
		{"steady", rounds(80, 80, 80), rounds(100, 100, 100), 0.8},
		// Medians taken apart would say 80 ÷ 120.
		{"machine speeds up and slows down", rounds(80, 60, 100), rounds(100, 120, 125), 0.8},
		{"one bad round", rounds(80, 10, 80), rounds(100, 100, 100), 0.8},
		{"no bare throughput in a round", rounds(80, 80, 90), rounds(100, 0, 100), 0.85},
		// An even count: the mean of the middle two, not the upper one.
		{"four rounds", rounds(70, 80, 90, 100), rounds(100, 100, 100, 100), 0.85},
		{"none at all", rounds(80), rounds(0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pairedRatio(tt.a, tt.b); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

// TestMedianAndRangeBy: the element with the median key (the upper middle
// for an even count) and the lowest and highest keys, whatever the order.
func TestMedianAndRangeBy(t *testing.T) {
	id := func(f float64) float64 { return f }
	tests := []struct {
		xs             []float64
		median, lo, hi float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{9, 1, 5}, 5, 1, 9},
		{[]float64{4, 1, 3, 2}, 3, 1, 4},
	}
	for _, tt := range tests {
		lo, hi := rangeBy(tt.xs, id)
		if m := medianBy(tt.xs, id); m != tt.median || lo != tt.lo || hi != tt.hi {
			t.Errorf("%v: median %v, range %v–%v; want %v, %v–%v", tt.xs, m, lo, hi, tt.median, tt.lo, tt.hi)
		}
	}
}
