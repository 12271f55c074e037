// Package optional lets a test use a program beyond Go, PostgreSQL and Redis
// (PgBouncer, Chromium): the test runs where the program is found, is
// required when CI=true (.ci/run installs the program, so a missing one is a
// failure there), and is otherwise left out and named in the file
// SKIPPED_CHECKS_FILE, whose lines `make test` prints as its last line.
// Only a missing optional program outside CI skips; a missing service fails.
package optional

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// SkippedChecksEnv names the file each left-out check appends a line to.
const SkippedChecksEnv = "SKIPPED_CHECKS_FILE"

// Tool is one optional program.
type Tool struct {
	// Name is what the messages and the left-out line call it.
	Name string
	// Env names a variable that, when set, is the only place looked at: a
	// path or a name on PATH. It points at a binary installed elsewhere, or
	// (any missing name, e.g. PGBOUNCER_BIN=none) tries the left-out path on
	// a machine that has the program.
	Env string
	// Install says how to get the program (shown when it is missing).
	Install string
	// Candidates are names looked up on PATH, then absolute paths (Debian
	// puts pgbouncer in /usr/sbin, off a normal user's PATH).
	Candidates []string
}

// Verdict is what a test does about its optional program.
type Verdict int

const (
	Run  Verdict = iota // found: run the test
	Fail                // missing with CI=true: fail, the test is required there
	Skip                // missing elsewhere: leave the test out, named
)

// Decide maps (found, the CI variable) to a verdict.
func Decide(found bool, ci string) Verdict {
	switch {
	case found:
		return Run
	case ci == "true" || ci == "1":
		return Fail
	default:
		return Skip
	}
}

// Lookup returns the program's path, or "" when it is not found.
func (tool Tool) Lookup() string {
	candidates := tool.Candidates
	if v, ok := os.LookupEnv(tool.Env); ok && tool.Env != "" {
		candidates = []string{v}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Require returns the program's path. Without one it fails t when CI=true,
// else records t's name as left out and skips it.
func (tool Tool) Require(t testing.TB) string {
	t.Helper()
	path := tool.Lookup()
	how := tool.Install
	if tool.Env != "" {
		how += fmt.Sprintf("; or set %s to its path", tool.Env)
	}
	switch Decide(path != "", os.Getenv("CI")) {
	case Fail:
		t.Fatalf("%s not found, and CI=true requires this check: %s", tool.Name, how)
	case Skip:
		if err := recordSkipped(os.Getenv(SkippedChecksEnv), fmt.Sprintf("%s (no %s)", t.Name(), tool.Name)); err != nil {
			t.Errorf("record the left-out check: %v", err)
		}
		t.Skipf("%s not found: check left out (%s; CI=true makes it required)", tool.Name, how)
	}
	return path
}

// recordSkipped appends one line to file (nothing when file is "": go test
// run by hand, where the skip message is the record).
func recordSkipped(file, line string) error {
	if file == "" {
		return nil
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	return f.Close()
}

// Chromium is Debian's chromium, which the console's browser tests drive
// headless: required in CI (.ci/run installs it).
func Chromium() Tool {
	return Tool{
		Name:       "chromium",
		Env:        "CHROMIUM_BIN",
		Install:    "install Debian's chromium package (apt-get install chromium); .ci/run does",
		Candidates: []string{"chromium", "chromium-browser", "google-chrome"},
	}
}
