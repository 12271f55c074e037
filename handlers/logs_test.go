package handlers

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

// TestBadRequestLogNamesTheRequest: the log line of a body that could not
// be read carries the request's id, the one its access line and its
// response carry.
func TestBadRequestLogNamesTheRequest(t *testing.T) {
	gin.SetMode(gin.TestMode)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	r := gin.New()
	r.Use(middleware.RequestLog(middleware.NewAccessLog(io.Discard, slog.LevelInfo)))
	Register(r, NewProducts(fakeProducts{}, HTTPCache{}, log), NewOrders(nil, 0, log), NewReports(nil, log),
		NewHealth(time.Second, nil), http.NotFoundHandler(), Classes{Authorize: allowAll})
	req := httptest.NewRequest(http.MethodPost, "/products", errBody{})
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", "req-42")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 (body %s)", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), `"msg":"bad request"`) || !strings.Contains(logs.String(), `"request_id":"req-42"`) {
		t.Errorf("log %q: want a bad request line with request_id req-42", logs.String())
	}
}

// TestRefusalLogsAreSampled: under overload every refused read would write
// a WARN line with its whole error chain; they are sampled, so logging
// cannot make the overload dearer. Every refusal still answers 503 with
// Retry-After, and at least one line says why.
func TestRefusalLogsAreSampled(t *testing.T) {
	gin.SetMode(gin.TestMode)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	r := gin.New()
	Register(r, NewProducts(fakeProducts{err: &repo.UnavailableError{RetryAfter: time.Second, Cause: errors.New("pool saturated")}}, HTTPCache{}, log),
		NewOrders(nil, 0, log), NewReports(nil, log), NewHealth(time.Second, nil), http.NotFoundHandler(), Classes{Authorize: allowAll})
	const refusals = 200
	start := time.Now()
	for i := range refusals {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/products/1", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("refusal %d: status %d, Retry-After %q: want 503 with Retry-After", i, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	// The sample allows unavailableLogsPerSecond lines in each second the
	// loop touched.
	seconds := int(time.Now().Unix()-start.Unix()) + 1
	lines := strings.Count(logs.String(), `"msg":"unavailable"`)
	if lines == 0 || lines > unavailableLogsPerSecond*seconds {
		t.Errorf("%d refusals in %d s wrote %d WARN lines, want 1 to %d", refusals, seconds, lines, unavailableLogsPerSecond*seconds)
	}
}
