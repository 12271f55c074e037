package checks

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

const workflowPath = ".github/workflows/test.yml"

// TestWorkflowLints runs actionlint (as a library, without shellcheck) on
// the CI workflow: syntax, expressions, action inputs, runner labels.
func TestWorkflowLints(t *testing.T) {
	path := filepath.Join(repoRoot(t), workflowPath)
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{WorkingDir: repoRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := linter.LintFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("%s:%d:%d: %s [%s]", workflowPath, e.Line, e.Column, e.Message, e.Kind)
	}
}

// TestWorkflowRunsMakeTestWithServices: the workflow runs `make test` with
// PostgreSQL and Redis service containers published where the URLs point.
func TestWorkflowRunsMakeTestWithServices(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), workflowPath))
	if err != nil {
		t.Fatal(err)
	}
	wf, errs := actionlint.Parse(src)
	if len(errs) > 0 {
		t.Fatalf("parse %s: %v", workflowPath, errs[0])
	}
	runsMakeTest := false
	images := map[string]string{}
	ports := map[string]bool{}
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			if run, ok := st.Exec.(*actionlint.ExecRun); ok && run.Run != nil && strings.Contains(run.Run.Value, "make test") {
				runsMakeTest = true
			}
		}
		if job.Services == nil {
			continue
		}
		for id, svc := range job.Services.Value {
			if svc.Container != nil && svc.Container.Image != nil {
				images[id] = svc.Container.Image.Value
			}
			if svc.Container != nil {
				for _, p := range svc.Container.Ports {
					ports[p.Value] = true
				}
			}
		}
	}
	if !runsMakeTest {
		t.Error("no step runs `make test`")
	}
	for id, image := range map[string]string{"postgres": "postgres:", "redis": "redis:"} {
		if !strings.HasPrefix(images[id], image) {
			t.Errorf("service %s: image %q, want %s*", id, images[id], image)
		}
	}
	for _, p := range []string{"5432:5432", "6379:6379"} {
		if !ports[p] {
			t.Errorf("no service publishes %s", p)
		}
	}
}

// TestWorkflowInstallsWhatCIRequires: GitHub sets CI=true, which makes the
// checks of every optional program required, so the workflow installs what
// .ci/run installs for them, and runs a k6 script, the 3-minute soak and the linters. Each row is a word a run
// step must contain, and the same for .ci/run ("" where it has no part).
func TestWorkflowInstallsWhatCIRequires(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, workflowPath))
	if err != nil {
		t.Fatal(err)
	}
	ciRun, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	wf, errs := actionlint.Parse(src)
	if len(errs) > 0 {
		t.Fatalf("parse %s: %v", workflowPath, errs[0])
	}
	var runs []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			if run, ok := st.Exec.(*actionlint.ExecRun); ok && run.Run != nil {
				runs = append(runs, run.Run.Value)
			}
		}
	}
	workflow := strings.Join(runs, "\n")
	var installs []string // the workflow's apt-get install lines
	for line := range strings.Lines(workflow) {
		if strings.Contains(line, "apt-get install") {
			installs = append(installs, line)
		}
	}
	installed := func(pkg string) bool {
		return slices.ContainsFunc(installs, func(l string) bool { return slices.Contains(strings.Fields(l), pkg) })
	}
	tests := []struct {
		what    string
		ok      bool   // the workflow has it
		inCIRun string // and .ci/run has this ("" where it has no part)
	}{
		{"redis-server, for the tests' Redis Cluster", installed("redis-server"), "--no-install-recommends redis-server"},
		{"pgbouncer", installed("pgbouncer"), "--no-install-recommends pgbouncer"},
		{"a browser for the console tests (ubuntu-latest ships google-chrome)", strings.Contains(workflow, "command -v google-chrome"), "--no-install-recommends chromium"},
		{"a k6 smoke run", strings.Contains(workflow, "make k6"), ""},
		{"the 3-minute soak", strings.Contains(workflow, "make soak SOAK=3m"), "make soak SOAK=3m"},
		{"lint (gofmt, go vet, staticcheck)", strings.Contains(workflow, "make lint"), "make lint"},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: missing from the run steps of %s", tt.what, workflowPath)
		}
		if tt.inCIRun != "" && !strings.Contains(string(ciRun), tt.inCIRun) {
			t.Errorf("%s: .ci/run does not contain %q", tt.what, tt.inCIRun)
		}
	}
}
