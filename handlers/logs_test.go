package handlers

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
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
