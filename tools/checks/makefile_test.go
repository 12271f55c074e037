package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakefileTargetsDocumented: every target has a `## comment` (the line
// `make help` prints) and is .PHONY, and the ones README.md and docs/
// promise exist (a fixed list: the docs are yours to rewrite).
func TestMakefileTargetsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([a-zA-Z_-]+):([^=]|$)`)
	phony := map[string]bool{}
	targets := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\n")
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			for _, name := range strings.Fields(rest) {
				phony[name] = true
			}
			continue
		}
		m := rule.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		targets[m[1]] = true
		if _, help, ok := strings.Cut(line, "## "); !ok || strings.TrimSpace(help) == "" {
			t.Errorf("target %s has no `## comment`, so `make help` does not list it", m[1])
		}
		if !phony[m[1]] {
			t.Errorf("target %s is not .PHONY", m[1])
		}
	}
	for _, want := range []string{"help", "build", "run", "test", "lint", "lab", "soak", "fuzz", "security"} {
		if !targets[want] {
			t.Errorf("no target %s", want)
		}
	}
}
