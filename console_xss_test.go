package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/db/dbtest"
)

// TestConsoleEscapesKeyNames: a lock key whose name is HTML (anyone who can
// write to Redis chooses key names) shows in the console as text and runs
// nothing: the payload would mark the page if it ran.
func TestConsoleEscapesKeyNames(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	a := launchApp(t, testEnv(t), nil)
	a.waitListening()
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	rdb := dbtest.NewRedis(t, redisDB)
	tag := dbtest.Unique()
	key := fmt.Sprintf(`lock:<img src=x onerror="document.body.dataset.pwned='%s'">`, tag)
	if err := rdb.Set(context.Background(), key, "token", 60*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom",
		fmt.Sprintf("http://%s/", admin[0]["addr"]))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	if strings.Contains(string(dom), "data-pwned") {
		t.Errorf("the key name ran as HTML (data-pwned set); DOM:\n%.3000s", dom)
	}
	if !strings.Contains(string(dom), "lock:&lt;img src=x") {
		t.Errorf("the hostile key is not shown as text; DOM:\n%.3000s", dom)
	}
}
