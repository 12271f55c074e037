package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsAddr: by default /metrics is on the public listener; with
// METRICS_ADDR it is on a listener of its own and the public one has none.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		addr       string
		wantPublic int
	}{
		{"default: public listener", "", http.StatusOK},
		{"METRICS_ADDR: own listener", "127.0.0.1:0", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t)
			env["METRICS_ADDR"] = tt.addr
			a := launchApp(t, env)
			base := a.waitListening()
			resp, body := call(t, "GET", base+"/metrics", nil, "")
			if resp.StatusCode != tt.wantPublic {
				t.Errorf("GET %s/metrics: %d, want %d", base, resp.StatusCode, tt.wantPublic)
			}
			// Moved, the public listener says where.
			if tt.addr != "" && !strings.Contains(string(body), "METRICS_ADDR") {
				t.Errorf("GET %s/metrics: %s, want an error naming METRICS_ADDR", base, body)
			}
			recs := a.logs.records("metrics listening")
			if tt.addr == "" {
				if len(recs) > 0 {
					t.Errorf("a metrics listener started without METRICS_ADDR: %v", recs)
				}
				return
			}
			if len(recs) == 0 {
				t.Fatal(`no "metrics listening" log line`)
			}
			resp, body = call(t, "GET", fmt.Sprintf("http://%s/metrics", recs[0]["addr"]), nil, "")
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "stampede_cache_results_total") {
				t.Errorf("GET /metrics on METRICS_ADDR: %d, body has stampede_cache_results_total %v", resp.StatusCode,
					strings.Contains(string(body), "stampede_cache_results_total"))
			}
		})
	}
}
