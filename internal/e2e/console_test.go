package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/optional"
)

// chromiumPath finds Debian's chromium: required in CI, else the test is
// left out and named (optional.Tool.Require).
func chromiumPath(t *testing.T) string {
	t.Helper()
	return optional.Chromium().Require(t)
}

// TestConsoleChartsReceiveData drives the live console in headless Chromium
// during a small stampede and checks, from the rendered DOM, that the charts
// received the per-second data the stampede caused.
func TestConsoleChartsReceiveData(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	env := testEnv(t)
	env["CACHE_SOFT_TTL"] = "300ms" // keeps refreshes (and lock activity) coming
	a := launchApp(t, env)
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

	chromium := func(out ...string) ([]byte, error) {
		args := append([]string{
			"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--window-size=1280,1100", "--hide-scrollbars",
			// Real fetches pause virtual time, so the page gets ~5 real ticks.
			"--virtual-time-budget=6000"}, out...)
		cmd := exec.CommandContext(ctx, browser, append(args, adminURL)...)
		var stderr bytes.Buffer // chromium logs D-Bus noise; shown only on failure
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("chromium: %w\n%s", err, stderr.String())
		}
		return b, nil
	}
	// The DOM to check and a screenshot to look at, of the same stampede.
	shot := filepath.Join(t.TempDir(), "console.png")
	var dom []byte
	var domErr, shotErr error
	var browsers sync.WaitGroup
	browsers.Go(func() { dom, domErr = chromium("--dump-dom") })
	browsers.Go(func() { _, shotErr = chromium("--screenshot=" + shot) })
	browsers.Wait()
	cancel()
	wg.Wait()
	if domErr != nil {
		t.Fatal(domErr)
	}
	if shotErr != nil {
		t.Fatal(shotErr)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("no screenshot (%v)", err)
	}
	if *consoleShot != "" {
		if err := os.WriteFile(*consoleShot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	checkConsoleDOM(t, string(dom))
}

// consoleShot: where TestConsoleChartsReceiveData saves its screenshot
// (go test -run TestConsoleChartsReceiveData -args -console.screenshot=$PWD/docs/console.png).
var consoleShot = flag.String("console.screenshot", "", "save the console test's screenshot to this PNG file")

// chartData reads the data-points and data-total attributes of a chart.
func chartData(t *testing.T, dom, id string) (int, float64) {
	t.Helper()
	m := regexp.MustCompile(`<div id="` + id + `"[^>]*>`).FindString(dom)
	if m == "" {
		t.Fatalf("no chart %q in the DOM", id)
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

// checkConsoleDOM: the charts got data, the breaker table and the page's
// words show the stampede.
func checkConsoleDOM(t *testing.T, dom string) {
	t.Helper()
	for _, chart := range []string{"cache", "db", "locks"} {
		points, total := chartData(t, dom, chart)
		if points < 2 {
			t.Errorf("chart %q: got %d data points, want at least 2", chart, points)
		}
		if total <= 0 {
			t.Errorf("chart %q: got total %v, want > 0 (the stampede's requests, loads and locks)", chart, total)
		}
	}
	if !regexp.MustCompile(`postgres_main</td><td><span class="closed">closed`).MatchString(dom) {
		t.Errorf("breaker table does not show postgres_main closed; DOM:\n%.2000s", dom)
	}
	// What the page says in words: the running mode, the ratio, the keys
	// of the stampede among the hot keys, and lock holders seen lately
	// (a lock lives milliseconds: a look at Redis now would show none).
	table := func(id string) string {
		_, rest, _ := strings.Cut(dom, `<table id="`+id+`">`)
		rows, _, _ := strings.Cut(rest, "</table>")
		return rows
	}
	for what, c := range map[string]struct{ in, re string }{
		"mode":           {dom, `<span id="mode"[^>]*>CACHE_MODE=swr</span>`},
		"ratio":          {dom, `<span id="saved">(1 query per [0-9.]+ requests|no query for [0-9]+ requests)</span>`},
		"hot keys":       {table("hot"), `<td>product 3[1-5]</td><td>[1-9][0-9]*</td>`},
		"recent holders": {table("recent"), `<td>[^<]*product:v1:\{3[1-5]\}</td><td>[0-9]+</td>`},
		"settings":       {dom, `LOCK_WAIT=<b>[0-9]`},
	} {
		if !regexp.MustCompile(c.re).MatchString(c.in) {
			re := c.re
			t.Errorf("console does not show the %s (want %s); DOM:\n%.3000s", what, re, dom)
		}
	}
}
