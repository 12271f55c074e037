package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/metricstext"
)

// The Grafana dashboard is only useful if every query names a metric the
// app really exports, with labels and label values it really has: a typo
// is an empty panel nobody notices until an incident. These tests start the
// real app, scrape /metrics and check the dashboard against it.

const dashboardPath = "../../deploy/observability/grafana/dashboard.json"

// grafanaTarget is one query of a panel: what these tests read of
// dashboard.json (its structure is checked in checks/grafana_test.go).
type grafanaTarget struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	where        string // panel 3 "Title" target A
}

var (
	// Metric names: the app's own families and the request histogram.
	dashMetricRe = regexp.MustCompile(`\b(stampede_[a-z0-9_]+|http_[a-z0-9_]+)\b`)
	// A selector's matchers: name{a="x", b=~"y|z"}.
	dashSelectorRe = regexp.MustCompile(`\b((?:stampede|http)_[a-z0-9_]+)\{([^}]*)\}`)
	dashMatcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	// Aggregation grouping: by (a, b) / without (a).
	dashGroupingRe = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	dashLegendRe   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	// Label values made only of plain words, so each alternative can be
	// looked up among the exported values.
	dashPlainValuesRe = regexp.MustCompile(`^[a-zA-Z0-9_]+(\|[a-zA-Z0-9_]+)*$`)
)

func TestDashboardMetricsAreExported(t *testing.T) {
	targets := dashboardTargets(t)
	exp := scrapeDashboardApp(t)
	for _, tg := range targets {
		checkDashboardExpr(t, tg.where, tg, exp)
	}
}

// TestDashboardSeriesExistAtStart: on a fresh app that has served nothing
// but Prometheus's own scrapes, every series a panel reads already exists
// (at zero), so no panel shows "No data" before the first refusal or load.
func TestDashboardSeriesExistAtStart(t *testing.T) {
	targets := dashboardTargets(t)
	base := startDashboardApp(t, map[string]string{"L1_TTL": "0"})
	var exp dashExport
	for range 2 { // the first scrape is the first request the histogram sees
		exp = newDashExport(scrapeMetrics(t, base))
	}
	for _, tg := range targets {
		checkDashboardExpr(t, "fresh app: "+tg.where, tg, exp)
	}
}

// checkDashboardExpr checks one target's metric names, label matchers,
// grouping labels and legend placeholders against what the app exports.
func checkDashboardExpr(t *testing.T, where string, tg grafanaTarget, exp dashExport) {
	t.Helper()
	series := dashMetricRe.FindAllString(tg.Expr, -1)
	if len(series) == 0 {
		t.Errorf("%s: expr %q names no stampede_* or http_* metric", where, tg.Expr)
		return
	}
	// Labels of every series the expr reads, plus the target labels
	// Prometheus adds to everything it scrapes.
	labels := map[string]bool{"job": true, "instance": true}
	for _, s := range series {
		if !exp.hasSeries(s) {
			t.Errorf("%s: %s is not exported by the app (GET /metrics families: %s)", where, s, strings.Join(exp.familyNames(), ", "))
			continue
		}
		for l := range exp.labels[s] {
			labels[l] = true
		}
	}

	for _, m := range dashSelectorRe.FindAllStringSubmatch(tg.Expr, -1) {
		name, matchers := m[1], m[2]
		for _, mm := range dashMatcherRe.FindAllStringSubmatch(matchers, -1) {
			label, op, value := mm[1], mm[2], mm[3]
			values, ok := exp.values[name][label]
			if !ok {
				t.Errorf("%s: %s has no label %q (matcher %s)", where, name, label, mm[0])
				continue
			}
			if (op == "=" || op == "=~") && dashPlainValuesRe.MatchString(value) {
				for _, v := range strings.Split(value, "|") {
					if !values[v] {
						t.Errorf("%s: %s{%s} never has value %q (exported: %s)", where, name, label, v, strings.Join(slices.Sorted(maps.Keys(values)), ", "))
					}
				}
			}
		}
	}

	grouping := map[string]bool{}
	for _, m := range dashGroupingRe.FindAllStringSubmatch(tg.Expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			grouping[l] = true
			if !labels[l] {
				t.Errorf("%s: groups by %q, which no series in %q has (labels: %s)", where, l, tg.Expr, strings.Join(slices.Sorted(maps.Keys(labels)), ", "))
			}
		}
	}

	// {{label}} in a legend must survive the aggregation, or every line of
	// the panel gets the same empty name.
	for _, m := range dashLegendRe.FindAllStringSubmatch(tg.LegendFormat, -1) {
		l := m[1]
		ok := labels[l]
		if len(grouping) > 0 {
			ok = grouping[l] && l != "le"
		}
		if !ok {
			t.Errorf("%s: legend %q uses {{%s}}, which the result of %q does not have", where, tg.LegendFormat, l, tg.Expr)
		}
	}
}

// dashboardTargets reads every panel's queries, those of collapsed rows
// included.
func dashboardTargets(t *testing.T) []grafanaTarget {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID      int             `json:"id"`
		Title   string          `json:"title"`
		Targets []grafanaTarget `json:"targets"`
		Panels  []panel         `json:"panels"` // a collapsed row's
	}
	var d struct{ Panels []panel }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []grafanaTarget
	for ps := d.Panels; len(ps) > 0; ps = ps[1:] {
		p := ps[0]
		ps = append(ps, p.Panels...)
		for _, tg := range p.Targets {
			tg.where = fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)
			out = append(out, tg)
		}
	}
	return out
}

// dashExport is what GET /metrics showed.
type dashExport struct {
	types  map[string]string                     // family → counter, gauge, histogram, ...
	labels map[string]map[string]bool            // series name → label names
	values map[string]map[string]map[string]bool // series name → label → values
}

// hasSeries reports whether name is an exported series name: a family, or
// a histogram's _bucket/_sum/_count (a summary's _sum/_count).
func (e dashExport) hasSeries(name string) bool {
	if typ, ok := e.types[name]; ok {
		return typ != "histogram" && typ != "summary"
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch e.types[base] {
		case "histogram":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// familyNames lists the app's own families (not go_*, process_*).
func (e dashExport) familyNames() []string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(e.types)) {
		if dashMetricRe.MatchString(n) {
			names = append(names, n)
		}
	}
	return names
}

// scrapeDashboardApp starts the app, makes it observe a request and a
// refusal (vector metrics only appear once they have a series), and parses
// GET /metrics.
func scrapeDashboardApp(t *testing.T) dashExport {
	t.Helper()
	// A client address of its own (believed from X-Forwarded-For, as from
	// a trusted proxy) with a budget of one request a minute: the second
	// request is refused, so stampede_requests_refused_total has a series,
	// and no other test's budget is touched.
	clientIP := testClientIP()
	base := startDashboardApp(t, map[string]string{
		"RATE_LIMIT":      "1-M",
		"TRUSTED_PROXIES": "127.0.0.1/32",
		"L1_TTL":          "0",
	})
	xff := map[string]string{"X-Forwarded-For": clientIP}
	if resp, body := call(t, http.MethodGet, base+"/products/1", xff, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /products/1: %d %s, want 200", resp.StatusCode, body)
	}
	if resp, body := call(t, http.MethodGet, base+"/products/1", xff, ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second GET /products/1 from %s with RATE_LIMIT=1-M: %d %s, want 429", clientIP, resp.StatusCode, body)
	}
	return newDashExport(scrapeMetrics(t, base))
}

// newDashExport indexes a scrape by series name: the families' types, and
// each sample line's label names and values.
func newDashExport(e metricstext.Exposition) dashExport {
	exp := dashExport{
		types:  e.Types,
		labels: map[string]map[string]bool{},
		values: map[string]map[string]map[string]bool{},
	}
	for _, s := range e.Samples {
		if exp.labels[s.Name] == nil {
			exp.labels[s.Name] = map[string]bool{}
			exp.values[s.Name] = map[string]map[string]bool{}
		}
		for _, l := range s.Labels {
			exp.labels[s.Name][l.Name] = true
			if exp.values[s.Name][l.Name] == nil {
				exp.values[s.Name][l.Name] = map[string]bool{}
			}
			exp.values[s.Name][l.Name][l.Value] = true
		}
	}
	return exp
}

// startDashboardApp runs the service with the defaults of a deployment
// (rate limits on, no write keys) but env, and returns its base URL.
func startDashboardApp(t *testing.T, env map[string]string) string {
	t.Helper()
	base, _ := startApp(t, testEnv(t, map[string]string{"RATE_LIMIT": "", "RATE_LIMIT_KEY": "", "API_KEYS": ""}, env))
	return base
}
