package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestReadyzSharesOneRoundOfChecks: /readyz runs before every limit, so a
// flood of it must not be a flood of pings. Fifty concurrent probes share
// one round of checks (one ping of each dependency, one log line for the
// one that failed); probes within checksReused of it reuse its answer;
// once it is stale the next probe pings again.
func TestReadyzSharesOneRoundOfChecks(t *testing.T) {
	defer gin.SetMode(gin.Mode())
	gin.SetMode(gin.ReleaseMode)
	var okPings, downPings atomic.Int64
	var logs dbtest.LogBuffer
	h := NewHealth(time.Second, slog.New(slog.NewJSONHandler(&logs, nil)),
		Check{Name: "db", Ping: func(context.Context) error {
			okPings.Add(1)
			time.Sleep(50 * time.Millisecond) // the others arrive while it runs
			return nil
		}},
		Check{Name: "cache", Ping: func(context.Context) error {
			downPings.Add(1)
			time.Sleep(50 * time.Millisecond)
			return errors.New("connection refused")
		}},
	)
	h.reuse = time.Hour // no round goes stale by the machine's slowness
	h.MarkReady()
	r := gin.New()
	r.GET("/readyz", h.readyz)
	probe := func() string {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if w.Code != http.StatusOK {
			t.Errorf("/readyz: %d %s, want 200", w.Code, w.Body)
		}
		return w.Body.String()
	}

	var wg sync.WaitGroup
	bodies := make([]string, 50)
	for i := range bodies {
		wg.Go(func() { bodies[i] = probe() })
	}
	wg.Wait()
	for _, b := range bodies {
		if !strings.Contains(b, `"db":"ok"`) || !strings.Contains(b, `"cache":"unreachable"`) || !strings.Contains(b, `"degraded":true`) {
			t.Fatalf("/readyz body %s, want db ok, cache unreachable, degraded", b)
		}
	}
	for range 10 {
		probe()
	}
	if ok, down := okPings.Load(), downPings.Load(); ok != 1 || down != 1 {
		t.Errorf("60 probes pinged db %d and cache %d times, want once each", ok, down)
	}
	if n := logs.Count("readiness: dependency check failed"); n != 1 {
		t.Errorf("%d log lines for the failed check, want 1", n)
	}

	h.reuse = 0 // stale at once
	probe()
	if ok := okPings.Load(); ok != 2 {
		t.Errorf("a probe after the round went stale: db pinged %d times in all, want 2", ok)
	}
}
