package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// TestErrorLogsNameTheRequest: the log line of every failed request (a
// body that could not be read, a refusal, a deadline, an unknown outcome,
// an internal error) carries the request's id, the one its access line and
// its response carry, so the reason can be matched to the request.
func TestErrorLogsNameTheRequest(t *testing.T) {
	gin.SetMode(gin.TestMode)
	tests := []struct {
		name, method, path string
		body               io.Reader
		err                error // what the repository answers
		status             int
		msg                string
	}{
		{"bad request", http.MethodPost, "/products", errBody{}, nil, http.StatusBadRequest, "bad request"},
		{"unavailable", http.MethodGet, "/products/1", nil, &repo.UnavailableError{RetryAfter: time.Second, Cause: errors.New("shed")}, http.StatusServiceUnavailable, "unavailable"},
		{"deadline", http.MethodGet, "/products/1", nil, fmt.Errorf("q: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, "request deadline exceeded"},
		{"outcome unknown", http.MethodPut, "/products/1", strings.NewReader(`{"name":"p","price_cents":5}`), fmt.Errorf("u: %w", repo.ErrOutcomeUnknown), http.StatusGatewayTimeout, "write outcome unknown"},
		{"internal", http.MethodGet, "/products/1", nil, errors.New("a bug"), http.StatusInternalServerError, "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			r := gin.New()
			r.Use(middleware.RequestLog(middleware.NewAccessLog(io.Discard, slog.LevelInfo)))
			Register(r, NewProducts(fakeProducts{err: tc.err}, HTTPCache{}, log), NewOrders(nil, 0, log), NewReports(nil, log),
				NewHealth(time.Second, nil), http.NotFoundHandler(), Classes{Authorize: allowAll})
			req := httptest.NewRequest(tc.method, tc.path, tc.body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-ID", "req-42")
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tc.status, rec.Body)
			}
			if !strings.Contains(logs.String(), `"msg":"`+tc.msg+`"`) || !strings.Contains(logs.String(), `"request_id":"req-42"`) {
				t.Errorf("log %q: want a %q line with request_id req-42", logs.String(), tc.msg)
			}
		})
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
