package checks

import (
	"io"
	"os"
	"path/filepath"
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
