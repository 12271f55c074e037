package middleware_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-guard/api/middleware"
)

// TestMetricsLabelsAreBounded: routes are templates, not raw paths, and an
// invented HTTP method is "other", so clients cannot mint time series.
func TestMetricsLabelsAreBounded(t *testing.T) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_seconds"}, []string{"route", "method", "status"})
	r := gin.New()
	r.Use(middleware.Metrics(h))
	r.GET("/products/:id", func(c *gin.Context) { c.Status(200) })
	for _, req := range []struct{ method, path string }{
		{"GET", "/products/1"}, {"GET", "/products/2"}, {"M1", "/products/1"}, {"M2", "/x"}, {"GET", "/nope/3"},
	} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	if got := testutil.CollectAndCount(h); got != 3 {
		t.Errorf("series: got %d, want 3 (GET /products/:id, other /products/:id or unmatched, GET unmatched)", got)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{} // series → requests observed
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				key = append(key, l.GetValue())
			}
			seen[strings.Join(key, " ")] = m.GetHistogram().GetSampleCount()
		}
	}
	if got := seen["GET /products/:id 200"]; got != 2 {
		t.Errorf("GET /products/:id 200 observed %d times, want 2", got)
	}
	// Labels come sorted by name: method, route, status.
	for _, want := range []string{"GET /products/:id 200", "other unmatched 404"} {
		if seen[want] == 0 {
			t.Errorf("series %q missing; got %v", want, seen)
		}
	}
}
