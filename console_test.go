package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// chromiumPath finds Debian's chromium: required in CI (.ci/run installs
// it), else the test is left out and named (optionalTool).
func chromiumPath(t *testing.T) string {
	t.Helper()
	return optionalTool(t, "install Debian's chromium package (apt-get install chromium); .ci/run does",
		"chromium", "chromium-browser", "google-chrome")
}

// TestConsoleChartsReceiveData drives the live console in headless Chromium
// during a small stampede and checks, from the rendered DOM, that the charts
// received the per-second data the stampede caused.
func TestConsoleChartsReceiveData(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	env := testEnv(t)
	env["CACHE_SOFT_TTL"] = "300ms" // keeps refreshes (and lock activity) coming
	a := launchApp(t, env, nil)
	base := a.waitListening()
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatalf("no \"admin listening\" log line")
	}
	adminURL := fmt.Sprintf("http://%s/", admin[0]["addr"])

	// A bounded stampede: 20 goroutines over 5 keys for as long as the
	// browser runs (at most 30 s).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				_, _, _ = send("GET", fmt.Sprintf("%s/products/%d", base, 31+(g+i)%5), nil, "")
				time.Sleep(5 * time.Millisecond)
			}
		})
	}

	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1200,900",
		// Real fetches pause virtual time, so the page gets ~5 real ticks.
		"--virtual-time-budget=6000", "--dump-dom", adminURL)
	var stderr bytes.Buffer // chromium logs D-Bus noise; shown only on failure
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}

	for _, chart := range []string{"cache", "db", "locks"} {
		points, total := chartData(t, string(dom), chart)
		if points < 2 {
			t.Errorf("chart %q: got %d data points, want at least 2", chart, points)
		}
		if total <= 0 {
			t.Errorf("chart %q: got total %v, want > 0 (the stampede's requests, loads and locks)", chart, total)
		}
	}
	if !regexp.MustCompile(`postgres_main</td><td><span class="closed">closed`).MatchString(string(dom)) {
		t.Errorf("breaker table does not show postgres_main closed; DOM:\n%.2000s", dom)
	}
}

// chartData reads the data-points and data-total attributes of a canvas.
func chartData(t *testing.T, dom, id string) (int, float64) {
	t.Helper()
	m := regexp.MustCompile(`<canvas id="` + id + `"[^>]*>`).FindString(dom)
	if m == "" {
		t.Fatalf("no canvas %q in the DOM", id)
	}
	attr := func(name string) string {
		sub := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(m)
		if sub == nil {
			return ""
		}
		return sub[1]
	}
	points, _ := strconv.Atoi(attr("data-points"))
	total, _ := strconv.ParseFloat(attr("data-total"), 64)
	return points, total
}
