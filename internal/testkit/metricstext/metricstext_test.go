package metricstext

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// A scrape as client_golang writes it: keys come back as the lines wrote
// them, histograms and summaries expanded, label values escaped again.
func TestParse(t *testing.T) {
	const text = `# HELP stampede_lock_events_total Lock events.
# TYPE stampede_lock_events_total counter
stampede_lock_events_total{event="contended"} 3
stampede_lock_events_total{event="lost_during_load"} 0
# TYPE stampede_hot_keys gauge
stampede_hot_keys 1
# TYPE stampede_refused_total counter
stampede_refused_total{pool="main",reason="say \"no\"\\n"} 2
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{method="GET",le="0.005"} 1
http_request_duration_seconds_bucket{method="GET",le="1e-05"} 0
http_request_duration_seconds_bucket{method="GET",le="+Inf"} 2
http_request_duration_seconds_sum{method="GET"} 0.5
http_request_duration_seconds_count{method="GET"} 2
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.25
go_gc_duration_seconds_sum 1
go_gc_duration_seconds_count 4
`
	e, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`stampede_lock_events_total{event="contended"}`:        3,
		`stampede_lock_events_total{event="lost_during_load"}`: 0,
		`stampede_hot_keys`: 1,
		`stampede_refused_total{pool="main",reason="say \"no\"\\n"}`:    2,
		`http_request_duration_seconds_bucket{method="GET",le="0.005"}`: 1,
		`http_request_duration_seconds_bucket{method="GET",le="1e-05"}`: 0,
		`http_request_duration_seconds_bucket{method="GET",le="+Inf"}`:  2,
		`http_request_duration_seconds_sum{method="GET"}`:               0.5,
		`http_request_duration_seconds_count{method="GET"}`:             2,
		`go_gc_duration_seconds{quantile="0.5"}`:                        0.25,
		`go_gc_duration_seconds_sum`:                                    1,
		`go_gc_duration_seconds_count`:                                  4,
	}
	if got := e.Values(""); !maps.Equal(got, want) {
		t.Errorf("Values(\"\"):\ngot  %v\nwant %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(e.Values("stampede_lock"))); len(got) != 2 {
		t.Errorf(`Values("stampede_lock"): %v, want the two lock samples`, got)
	}
	types := map[string]string{
		"stampede_lock_events_total": "counter", "stampede_hot_keys": "gauge", "stampede_refused_total": "counter",
		"http_request_duration_seconds": "histogram", "go_gc_duration_seconds": "summary",
	}
	if !maps.Equal(e.Types, types) {
		t.Errorf("Types: got %v, want %v", e.Types, types)
	}
}

func TestParseRefusesWhatIsNotMetrics(t *testing.T) {
	for _, text := range []string{"", "<html>502 Bad Gateway</html>\n"} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("Parse(%q): no error", text)
		}
	}
}
