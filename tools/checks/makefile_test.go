package checks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestFuzzTargetCoversEveryFuzzer: `make fuzz` runs every Fuzz function in
// the repository. A fuzzer left out of the recipe runs only its seeds, so
// what it guards (a parser of untrusted bytes) is never actually fuzzed.
func TestFuzzTargetCoversEveryFuzzer(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^fuzz:.*\n((?:\t.*\n)+)`).FindSubmatch(data)
	if recipe == nil {
		t.Fatal("Makefile: no fuzz target with a recipe")
	}
	runs := map[string]bool{} // "<package dir> <fuzzer>"
	for _, m := range regexp.MustCompile(`-fuzz '\^(Fuzz\w+)\$\$'.* \./(\S+)`).FindAllSubmatch(recipe[1], -1) {
		runs[string(m[2])+" "+string(m[1])] = true
	}
	fuzzer := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git and the like hold no package
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fuzzer.FindAllSubmatch(src, -1) {
			found++
			if !runs[filepath.ToSlash(dir)+" "+string(m[1])] {
				t.Errorf("%s: %s is not run by `make fuzz` (add: go test -run '^$$' -fuzz '^%s$$' -fuzztime $(FUZZTIME) ./%s)",
					path, m[1], m[1], filepath.ToSlash(dir))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no Fuzz function found: the walk is broken")
	}
}

// TestFuzzWorkersRun: a fuzzer whose package's TestMain starts the shared
// test Redis Cluster (cache) still fuzzes. Its workers once waited for the
// cluster's lock, which the coordinator holds, until -fuzztime ran out:
// `make fuzz` passed having run 0 inputs. With a count of inputs instead of
// a time, such a wait never ends, so a deadline fails it. The deadline runs
// from the coordinator's first "fuzz:" line, not from the start: building
// the instrumented package from a cold cache on a starved machine (CI
// beside four CPU burners) took more than the whole 4 min once.
func TestFuzzWorkersRun(t *testing.T) {
	const (
		buildLimit = 12 * time.Minute // a cold, starved build; a guard, not a goal
		fuzzLimit  = 2 * time.Minute  // 200 inputs take well under a second
	)
	ctx, cancel := context.WithTimeout(context.Background(), buildLimit+fuzzLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-fuzz", "^FuzzOpen$", "-fuzztime", "200x", "./cache")
	cmd.Dir = repoRoot(t)
	cmd.WaitDelay = 5 * time.Second // the workers share its output pipes
	out := &fuzzOutput{started: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	build := time.NewTimer(buildLimit)
	defer build.Stop()
	started := (<-chan struct{})(out.started)
	var fuzzing <-chan time.Time // armed once fuzzing starts
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("go test -fuzz FuzzOpen: %v\n%s", err, lastLines(out.bytes(), 20))
			}
			return
		case <-started:
			started = nil // fires once
			build.Stop()
			fuzzing = time.After(fuzzLimit)
		case <-build.C:
			cancel()
			<-done
			t.Fatalf("FuzzOpen did not start fuzzing within %s (build or test start hung):\n%s", buildLimit, lastLines(out.bytes(), 5))
		case <-fuzzing:
			cancel()
			<-done
			t.Fatalf("FuzzOpen ran no 200 inputs in %s of fuzzing (its workers wait for something):\n%s", fuzzLimit, lastLines(out.bytes(), 5))
		}
	}
}

// fuzzOutput collects go test's output and closes started at the first
// line from the fuzzing coordinator.
type fuzzOutput struct {
	mu      sync.Mutex
	buf     []byte
	started chan struct{} // closed once, at the coordinator's first line
	closed  bool
}

func (o *fuzzOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if !o.closed && bytes.Contains(o.buf, []byte("fuzz: elapsed")) {
		o.closed = true
		close(o.started)
	}
	return len(p), nil
}

func (o *fuzzOutput) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.buf...)
}

// lastLines is the end of a command's output, for a failure message.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
