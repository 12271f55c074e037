package checks

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenameMakesAnOwnModule: `make rename` (tools/scripts/rename.sh) run
// on a copy of the tracked files leaves no file naming the template's
// module (but the script and this test, which must), and the copy builds
// under its new name, checks module included. It is the one check that
// builds the whole app again from scratch: about a minute on 2 idle cores.
func TestRenameMakesAnOwnModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a renamed copy of the app (about a minute)")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	files := strings.Split(strings.TrimRight(string(mustRun(t, root, "git", "ls-files")), "\n"), "\n")
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		info, _ := os.Stat(filepath.Join(root, f))
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, dir, "git", "init", "-q")
	mustRun(t, dir, "git", "add", "-A")
	out := mustRun(t, dir, "bash", "tools/scripts/rename.sh", "example.com/acme/shop")
	t.Logf("%s", out)
	if grep, _ := exec.Command("git", "-C", dir, "grep", "-Il", "github.com/stampede-guard/api",
		"--", ".", ":!tools/scripts/rename.sh", ":!tools/checks/rename_test.go").Output(); len(grep) > 0 {
		t.Errorf("after rename these files still name the template's module:\n%s", grep)
	}
	if !bytes.Contains(mustRun(t, dir, "go", "list", "-m"), []byte("example.com/acme/shop")) {
		t.Error("go list -m does not name the new module")
	}
	mustRun(t, dir, "go", "build", "./...")
	mustRun(t, filepath.Join(dir, "tools", "checks"), "go", "vet", ".")
	// A second run refuses: the module is already renamed.
	if err := exec.Command("bash", filepath.Join(dir, "tools/scripts/rename.sh"), "example.com/other").Run(); err == nil {
		t.Error("a second rename succeeded; want a refusal (go.mod no longer names the template)")
	}
}

// mustRun runs name args in dir and returns its output, failing t on error.
func mustRun(t *testing.T, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return out
}
