package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README and docs/ name files and folders of the tree in backticks
// (`cache/load.go`, `deploy/k8s`). A move that leaves them behind sends a
// newcomer to nothing, so every such path must exist.

// docPath is a backticked path with a slash inside or at its end
// (`db/guard.go`, `repo/`) whose first element has no dot (so
// `example.com/yourapp` and `k8s.io/api`, module paths, are not taken for
// files).
var docPath = regexp.MustCompile("`([a-z][a-z0-9_-]*(?:/[A-Za-z0-9_.-]+)*/|[a-z][a-z0-9_-]*(?:/[A-Za-z0-9_.-]+)+)`")

// notInTree are backticked paths that are not files of the repository:
// built or written by a run, or an API group.
var notInTree = []string{"bin/api", "lab-results/results.json", "soak-results/soak.json", "soak-results/soak.svg", "autoscaling/v2"}

// docPathErrors returns each backticked path of doc (named name) that does
// not exist under root.
func docPathErrors(root, name, doc string) []error {
	var errs []error
	for i, line := range strings.Split(doc, "\n") {
		for _, m := range docPath.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if slices.Contains(notInTree, p) {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: `%s` is not in the tree", name, i+1, p))
			}
		}
	}
	return errs
}

// docFiles are the README and every Markdown file of docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// TestDocPathsExist: every backticked path in the README and docs/ exists.
func TestDocPathsExist(t *testing.T) {
	root := repoRoot(t)
	for _, f := range docFiles(t, root) {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, err := range docPathErrors(root, rel, string(doc)) {
			t.Error(err)
		}
	}
}

// TestDocPathCheckCatchesMistakes: a path that moved is reported; module
// paths and the listed exceptions are not.
func TestDocPathCheckCatchesMistakes(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		doc  string
		errs int
	}{
		{"see `cache/load.go` and `deploy/k8s/`", 0},
		{"the proxy in `netproxy/` and `internal/rediscluster`", 2},
		{"go run `example.com/yourapp/tools/checks`, build `bin/api`", 0},
	}
	for _, c := range cases {
		if got := len(docPathErrors(root, "doc.md", c.doc)); got != c.errs {
			t.Errorf("%q: %d errors, want %d", c.doc, got, c.errs)
		}
	}
}
