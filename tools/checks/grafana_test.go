package checks

// The Grafana dashboard's structure and provisioning. That every query names
// series the app exports is checked in the root package, against a running
// app (dashboard_test.go).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	RefID      string             `json:"refId"`
	Expr       string             `json:"expr"`
	Datasource *grafanaDatasource `json:"datasource"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func TestDashboardStructure(t *testing.T) {
	dash := loadDashboard(t)
	if dash.UID == "" {
		t.Error("dashboard has no uid")
	}
	if dash.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want >= 36 (Grafana 9+)", dash.SchemaVersion)
	}
	panels := dashboardPanels(dash.Panels)
	if len(panels) == 0 {
		t.Fatal("dashboard has no panels")
	}
	ids := map[int]string{}
	var exprs []string
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q has id %d (missing or also used by %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Datasource == nil || p.Datasource.UID != "prometheus" {
			t.Errorf("panel %q datasource %+v, want uid prometheus", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s has no expr", p.Title, tg.RefID)
			}
			if tg.Datasource != nil && tg.Datasource.UID != "prometheus" {
				t.Errorf("panel %q target %s datasource %+v, want uid prometheus", p.Title, tg.RefID, tg.Datasource)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	// The views the dashboard exists for.
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"stampede_cache_results_total", "stampede_cache_loads_total", "stampede_db_pool_acquires_total",
		"stampede_lock_events_total", "stampede_singleflight_shared_total", "stampede_breaker_state",
		"stampede_requests_refused_total", "stampede_db_pool_refused_total", "stampede_db_pool_waiting",
		"histogram_quantile(0.5,", "histogram_quantile(0.95,", "histogram_quantile(0.99,",
		"http_request_duration_seconds_bucket",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no panel query contains %q", want)
		}
	}

	// Provisioning points Grafana at the same datasource uid.
	ds, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/observability/grafana/provisioning/datasources/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"uid: prometheus", "url: http://prometheus:9090"} {
		if !strings.Contains(string(ds), want) {
			t.Errorf("datasource provisioning does not contain %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "deploy/observability/grafana/provisioning/dashboards/dashboards.yml")); err != nil {
		t.Error(err)
	}
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	path := filepath.Join(repoRoot(t), "deploy/observability/grafana/dashboard.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
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
