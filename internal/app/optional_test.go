package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Optional tools: a check that needs a program beyond Go, PostgreSQL and
// Redis (Chromium for the console test) runs when the program is found, is
// required in CI (CI=true: .ci/run installs it), and is otherwise left out
// and named in SKIPPED_CHECKS_FILE, which `make test` prints as one line.
// Only a missing optional tool outside CI skips; a missing service fails.

// skippedChecksEnv names the file each left-out check appends a line to.
const skippedChecksEnv = "SKIPPED_CHECKS_FILE"

// toolVerdict is what a check does about its optional tool.
type toolVerdict int

const (
	toolRun  toolVerdict = iota // found: run the check
	toolFail                    // missing in CI: fail, the check is required there
	toolSkip                    // missing elsewhere: leave the check out, named
)

// decideTool maps (found, the CI variable) to a verdict.
func decideTool(found bool, ci string) toolVerdict {
	switch {
	case found:
		return toolRun
	case ci == "true" || ci == "1":
		return toolFail
	default:
		return toolSkip
	}
}

// optionalTool returns the path of the first of names on PATH. Without one
// it fails the test in CI, else records the left-out check and skips it.
func optionalTool(t *testing.T, install string, names ...string) string {
	t.Helper()
	path := ""
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	switch decideTool(path != "", os.Getenv("CI")) {
	case toolFail:
		t.Fatalf("%s not found, and CI=true requires this check: %s", names[0], install)
	case toolSkip:
		if err := recordSkipped(os.Getenv(skippedChecksEnv), fmt.Sprintf("%s (no %s)", t.Name(), names[0])); err != nil {
			t.Errorf("record the left-out check: %v", err)
		}
		t.Skipf("%s not found: check left out (%s; CI=true makes it required)", names[0], install)
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
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func TestDecideTool(t *testing.T) {
	tests := []struct {
		found bool
		ci    string
		want  toolVerdict
	}{
		{true, "", toolRun},
		{true, "true", toolRun},
		{false, "true", toolFail},
		{false, "1", toolFail},
		{false, "", toolSkip},
		{false, "false", toolSkip},
	}
	for _, tt := range tests {
		if got := decideTool(tt.found, tt.ci); got != tt.want {
			t.Errorf("decideTool(found %v, CI=%q) = %d, want %d", tt.found, tt.ci, got, tt.want)
		}
	}
}

// TestOptionalToolLeftOutIsRecorded runs optionalTool for a program that
// does not exist, outside CI, in a subtest: it must skip (not fail) and
// leave its name in the file `make test` prints.
func TestOptionalToolLeftOutIsRecorded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skipped")
	t.Setenv(skippedChecksEnv, file)
	t.Setenv("CI", "")
	var sub *testing.T
	t.Run("needs-missing-tool", func(t *testing.T) {
		sub = t
		optionalTool(t, "nothing to install", "no-such-program-"+t.Name()[:4])
		t.Error("optionalTool returned for a missing program outside CI")
	})
	if !sub.Skipped() || sub.Failed() {
		t.Errorf("subtest skipped %v failed %v, want skipped and not failed", sub.Skipped(), sub.Failed())
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "TestOptionalToolLeftOutIsRecorded/needs-missing-tool") {
		t.Errorf("%s = %q (%v), want the subtest's name", skippedChecksEnv, b, err)
	}
}
