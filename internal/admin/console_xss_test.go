package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/console"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/internal/testkit/optional"
)

// TestConsoleEscapesEveryValue: every value the console shows comes from
// the state feed, and some of it from anyone who can write to Redis (lock
// key names). The page is fed a state whose every string is HTML that
// would mark the page if it ran; it must show them as text and run none.
func TestConsoleEscapesEveryValue(t *testing.T) {
	t.Parallel()
	browser := optional.Chromium().Require(t)
	payload := func(where string) string {
		return fmt.Sprintf(`<img src=x onerror="document.body.dataset.pwned='%s'">`, where)
	}
	st := state{
		TimeMillis:  time.Now().UnixMilli(),
		Breakers:    map[string]string{payload("breaker-name"): payload("breaker-state")},
		Pools:       []poolState{{Name: payload("pool")}},
		Refused:     map[string]int64{payload("refused") + "/x": 1},
		Locks:       []lockHolder{{Key: "lock:" + payload("lock"), TTLMs: 1000}},
		Settings:    []Setting{{Name: payload("setting-name"), Value: payload("setting")}, {Name: "CACHE_MODE", Value: payload("mode")}},
		TopKeys:     []keyCount{{Key: payload("hot"), Count: 1}},
		HotKeys:     []hotkeys.Rate{{Key: payload("hot-key"), PerSecond: 120, Hot: true}},
		RecentLocks: []recentLock{{Key: payload("recent"), Fills: 1}},
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", console.Handler())
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", srv.URL+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	page := string(dom)
	if i := strings.Index(page, "data-pwned"); i >= 0 {
		t.Errorf("a value ran as HTML: %s", page[max(0, i-200):min(len(page), i+200)])
	}
	for _, where := range []string{"lock", "breaker-name", "pool", "setting-name", "setting", "mode", "hot", "recent", "hot-key"} {
		if !strings.Contains(page, "&lt;img src=x onerror=\"document.body.dataset.pwned='"+where+"'\"&gt;") {
			t.Errorf("the %s value is not shown as text", where)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", page)
	}
}
