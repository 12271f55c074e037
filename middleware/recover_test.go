package middleware_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
)

// TestRecover: a panic becomes a logged stack trace and a JSON 500 that
// leaks nothing; http.ErrAbortHandler is passed on, as net/http expects.
func TestRecover(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	r := gin.New()
	r.Use(middleware.Recover(log))
	r.GET("/boom", func(*gin.Context) { panic("secret detail") })
	r.GET("/abort", func(*gin.Context) { panic(http.ErrAbortHandler) })

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"internal error"}` {
		t.Errorf("panic answer: got %d %s, want 500 {\"error\":\"internal error\"}", rec.Code, rec.Body)
	}
	for _, want := range []string{"panic recovered", "secret detail", "recover_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log: got %s, want it to contain %q (with the stack)", logs.String(), want)
		}
	}

	func() {
		defer func() {
			if got := recover(); got != http.ErrAbortHandler {
				t.Errorf("ErrAbortHandler: got recover() = %v, want it re-panicked", got)
			}
		}()
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/abort", nil))
	}()
}

// TestRequestID: a sane client id is kept and echoed; anything else is
// replaced by a fresh one.
func TestRequestID(t *testing.T) {
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"sane", "abc-123_X.y", true},
		{"absent", "", false},
		{"too long", strings.Repeat("a", 65), false},
		{"header injection", "a\r\nb", false},
		{"spaces", "a b", false},
	}
	r := gin.New()
	r.Use(middleware.RequestLog(middleware.NewAccessLog(&bytes.Buffer{}, slog.LevelInfo)))
	r.GET("/", func(c *gin.Context) { c.String(200, middleware.RequestID(c)) })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header["X-Request-Id"] = []string{tc.sent}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			got := rec.Header().Get("X-Request-ID")
			if (got == tc.sent) != tc.kept || got == "" || rec.Body.String() != got {
				t.Errorf("sent %q: got header %q, body %q; want kept=%v and both equal", tc.sent, got, rec.Body, tc.kept)
			}
		})
	}
}

// TestTimeout: the handler's context carries the request deadline: d after
// the request came in. Bracketing it between clock reads taken before and
// after the request (not "time left" read inside the handler, which a
// loaded machine can push past the deadline) cannot flake.
func TestTimeout(t *testing.T) {
	const d = 50 * time.Millisecond
	r := gin.New()
	r.Use(middleware.Timeout(d))
	var dl time.Time
	var ok bool
	r.GET("/", func(c *gin.Context) { dl, ok = c.Request.Context().Deadline() })
	before := time.Now()
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	after := time.Now()
	if !ok || dl.Before(before.Add(d)) || dl.After(after.Add(d)) {
		t.Errorf("deadline: got %v (set %v), want %s after the request, within [%v, %v]", dl, ok, d, before.Add(d), after.Add(d))
	}
}
