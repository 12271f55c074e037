package optional

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		found bool
		ci    string
		want  Verdict
	}{
		{true, "", Run},
		{true, "true", Run},
		{false, "true", Fail},
		{false, "1", Fail},
		{false, "", Skip},
		{false, "false", Skip},
	}
	for _, tt := range tests {
		if got := Decide(tt.found, tt.ci); got != tt.want {
			t.Errorf("Decide(found %v, CI=%q) = %d, want %d", tt.found, tt.ci, got, tt.want)
		}
	}
}

// recorder stands in for the test a Require call belongs to: it keeps the
// last Fatalf or Skipf message and stops the goroutine, as testing.T does.
type recorder struct {
	testing.TB
	name        string
	fatal, skip string
	errs        []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Name() string                 { return r.name }
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...); runtime.Goexit() }
func (r *recorder) Skipf(f string, args ...any)  { r.skip = fmt.Sprintf(f, args...); runtime.Goexit() }

// require runs tool.Require against a recorder in its own goroutine (Goexit
// ends only that one) and returns the recorder and the path it returned.
func require(tool Tool, name string) (*recorder, string) {
	r := &recorder{name: name}
	path := ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = tool.Require(r)
	}()
	<-done
	return r, path
}

// TestRequire: found → the path; missing outside CI → skipped and named in
// the file; missing with CI=true → a failure naming how to install it; the
// Env variable, when set, is the only place looked at.
func TestRequire(t *testing.T) {
	sh := Tool{Name: "sh", Env: "OPTIONAL_TEST_SH_BIN", Install: "apt-get install dash", Candidates: []string{"sh"}}
	missing := Tool{Name: "nope", Install: "apt-get install nope", Candidates: []string{"no-such-program-optional-test", "/no/such/path"}}
	tests := []struct {
		name      string
		tool      Tool
		ci        string
		envValue  *string
		wantPath  bool
		wantSkip  bool
		wantFatal bool
	}{
		{name: "found", tool: sh, wantPath: true},
		{name: "found in CI", tool: sh, ci: "true", wantPath: true},
		{name: "missing", tool: missing, wantSkip: true},
		{name: "missing in CI", tool: missing, ci: "true", wantFatal: true},
		{name: "hidden by its variable", tool: sh, envValue: ptr("none"), wantSkip: true},
		{name: "hidden by its variable in CI", tool: sh, ci: "true", envValue: ptr("none"), wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "skipped")
			t.Setenv(SkippedChecksEnv, file)
			t.Setenv("CI", tt.ci)
			if tt.envValue != nil {
				t.Setenv("OPTIONAL_TEST_SH_BIN", *tt.envValue)
			}
			r, path := require(tt.tool, "TestX/"+tt.name)
			if (path != "") != tt.wantPath || (r.skip != "") != tt.wantSkip || (r.fatal != "") != tt.wantFatal || len(r.errs) > 0 {
				t.Fatalf("path %q skip %q fatal %q errs %v; want path %v skip %v fatal %v",
					path, r.skip, r.fatal, r.errs, tt.wantPath, tt.wantSkip, tt.wantFatal)
			}
			b, _ := os.ReadFile(file)
			recorded := strings.Contains(string(b), "TestX/"+tt.name+" (no "+tt.tool.Name+")")
			if recorded != tt.wantSkip {
				t.Errorf("%s = %q; want the test named there: %v", SkippedChecksEnv, b, tt.wantSkip)
			}
			if tt.wantFatal && !strings.Contains(r.fatal, tt.tool.Install) {
				t.Errorf("failure %q does not say how to install %s", r.fatal, tt.tool.Name)
			}
		})
	}
}

// TestRequireVariableNamesPath: a path in the variable is used as is.
func TestRequireVariableNamesPath(t *testing.T) {
	t.Setenv("OPTIONAL_TEST_SH_BIN", "/bin/sh")
	tool := Tool{Name: "sh", Env: "OPTIONAL_TEST_SH_BIN", Candidates: []string{"no-such-program-optional-test"}}
	if got := tool.Lookup(); got != "/bin/sh" {
		t.Errorf("Lookup() = %q, want /bin/sh from the variable", got)
	}
}

func ptr(s string) *string { return &s }
