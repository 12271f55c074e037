package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db/dbtest"
)

// The Grafana dashboard is only useful if every query names a metric the
// app really exports, with labels and label values it really has: a typo
// is an empty panel nobody notices until an incident. These tests start the
// real app, scrape /metrics and check the dashboard against it.

const dashboardPath = "observability/grafana/dashboard.json"

// grafanaDashboard is the part of dashboard.json the tests read.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Title      string             `json:"title"`
	Type       string             `json:"type"`
	Datasource *grafanaDatasource `json:"datasource"`
	Targets    []grafanaTarget    `json:"targets"`
	Panels     []grafanaPanel     `json:"panels"` // collapsed rows
}

type grafanaTarget struct {
	RefID        string             `json:"refId"`
	Expr         string             `json:"expr"`
	LegendFormat string             `json:"legendFormat"`
	Datasource   *grafanaDatasource `json:"datasource"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
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
	dash := loadDashboard(t)
	exp := scrapeDashboardApp(t)

	for _, p := range dashboardPanels(dash.Panels) {
		for _, tg := range p.Targets {
			where := fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)
			checkDashboardExpr(t, where, tg, exp)
		}
	}
}

// TestDashboardSeriesExistAtStart: on a fresh app that has served nothing
// but Prometheus's own scrapes, every series a panel reads already exists
// (at zero), so no panel shows "No data" before the first refusal or load.
func TestDashboardSeriesExistAtStart(t *testing.T) {
	dash := loadDashboard(t)
	base := startDashboardApp(t, map[string]string{"L1_TTL": "0"})
	var exp dashExport
	for range 2 { // the first scrape is the first request the histogram sees
		code, body := httpGet(t, base+"/metrics", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", code, body)
		}
		var err error
		if exp, err = parseDashboardMetrics(body); err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
	}
	for _, p := range dashboardPanels(dash.Panels) {
		for _, tg := range p.Targets {
			checkDashboardExpr(t, fmt.Sprintf("fresh app: panel %d %q target %s", p.ID, p.Title, tg.RefID), tg, exp)
		}
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
						t.Errorf("%s: %s{%s} never has value %q (exported: %s)", where, name, label, v, strings.Join(dashSortedKeys(values), ", "))
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
				t.Errorf("%s: groups by %q, which no series in %q has (labels: %s)", where, l, tg.Expr, strings.Join(dashSortedKeys(labels), ", "))
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

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// dashboardPanels flattens collapsed rows.
func dashboardPanels(ps []grafanaPanel) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, dashboardPanels(p.Panels)...)
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
	for _, n := range dashSortedKeys(e.types) {
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
	var b [2]byte
	_, _ = rand.Read(b[:])
	clientIP := fmt.Sprintf("198.18.%d.%d", b[0], 1+b[1]%254)
	base := startDashboardApp(t, map[string]string{
		"RATE_LIMIT":      "1-M",
		"TRUSTED_PROXIES": "127.0.0.1/32",
		"L1_TTL":          "0",
	})
	get := func(path string, header map[string]string) (int, []byte) {
		t.Helper()
		return httpGet(t, base+path, header)
	}
	xff := map[string]string{"X-Forwarded-For": clientIP}
	if code, body := get("/products/1", xff); code != http.StatusOK {
		t.Fatalf("GET /products/1: %d %s, want 200", code, body)
	}
	if code, body := get("/products/1", xff); code != http.StatusTooManyRequests {
		t.Fatalf("second GET /products/1 from %s with RATE_LIMIT=1-M: %d %s, want 429", clientIP, code, body)
	}
	code, body := get("/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	exp, err := parseDashboardMetrics(body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return exp
}

// httpGet sends a GET with header and returns the status and body.
func httpGet(t *testing.T, url string, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// parseDashboardMetrics reads the Prometheus text format: # TYPE lines give
// the families, sample lines their series' labels and values.
func parseDashboardMetrics(text []byte) (dashExport, error) {
	exp := dashExport{
		types:  map[string]string{},
		labels: map[string]map[string]bool{},
		values: map[string]map[string]map[string]bool{},
	}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 {
				return exp, fmt.Errorf("bad TYPE line %q", line)
			}
			exp.types[f[0]] = f[1]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil {
			return exp, fmt.Errorf("bad sample line %q", line)
		}
		name := m[1]
		if exp.labels[name] == nil {
			exp.labels[name] = map[string]bool{}
			exp.values[name] = map[string]map[string]bool{}
		}
		for _, l := range label.FindAllStringSubmatch(m[2], -1) {
			exp.labels[name][l[1]] = true
			if exp.values[name][l[1]] == nil {
				exp.values[name][l[1]] = map[string]bool{}
			}
			exp.values[name][l[1]][l[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return exp, err
	}
	if len(exp.types) == 0 {
		return exp, errors.New("no # TYPE lines")
	}
	return exp, nil
}

// startDashboardApp runs the service (run, as main does) on a fresh
// database and Redis db 4 and returns its base URL once it logs
// "listening". Cleanup cancels it and waits for run to return.
func startDashboardApp(t *testing.T, env map[string]string) string {
	t.Helper()
	vars := map[string]string{
		"HTTP_ADDR":    "127.0.0.1:0",
		"ADMIN_ADDR":   "127.0.0.1:0",
		"DATABASE_URL": dbtest.NewDatabase(t, "dash"),
		"REDIS_URL":    dbtest.RedisDBURL(redisDB),
		// Keys, limit counters and channels of its own, deleted at the end.
		"CACHE_NAMESPACE": dbtest.Namespace(t, redisDB),
	}
	for k, v := range env {
		vars[k] = v
	}
	logs := &dashLogs{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return vars[k] }, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after cancel, want nil", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("run did not return within 60s of cancel")
		}
		if t.Failed() {
			t.Logf("service log:\n%s", logs)
		}
	})

	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if addr := logs.listeningAddr(); addr != "" {
			return "http://" + addr
		}
		select {
		case err := <-done:
			done <- err // for cleanup
			t.Fatalf("run returned before listening: %v\nlog:\n%s", err, logs)
		case <-deadline:
			t.Fatalf("no \"listening\" log line within 30s\nlog:\n%s", logs)
		case <-tick.C:
		}
	}
}

// dashLogs is run's stdout, safe for concurrent writes and reads.
type dashLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *dashLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *dashLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// listeningAddr is the "addr" of the first complete "listening" JSON line.
func (l *dashLogs) listeningAddr() string {
	for line := range strings.Lines(l.String()) {
		if !strings.HasSuffix(line, "\n") {
			break // still being written
		}
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
			return rec.Addr
		}
	}
	return ""
}

func dashSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
