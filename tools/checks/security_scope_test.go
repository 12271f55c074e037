package checks

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSecurityScansTheBinarysPackages: `make security` hands gosec every
// package of this module the binary is built from (`go list -deps .`)
// plus the client and its examples — no more, no less. An -exclude-dir
// that drops shipped code (the issue found `-exclude-dir=internal`
// skipping cache/internal/redislock, internal/server, internal/logbuf,
// internal/retryhint) or a hand-kept list that misses a new package
// fails here. gosec's arguments are read as gosec reads them: a path
// ending in /... is every directory below it holding .go files, but those
// an -exclude-dir pattern matches.
func TestSecurityScansTheBinarysPackages(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	goBin, argsFile := filepath.Join(dir, "go"), filepath.Join(dir, "gosec-args")
	if err := os.WriteFile(goBin, []byte(fakeGo), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "tools", "scripts", "security.sh"))
	cmd.Env = append(os.Environ(), "GO="+goBin, "REAL_GO="+realGo(t), "FAKE_VULN=clean", "FAKE_GOSEC_ARGS="+argsFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("security.sh: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("gosec was not run: %v", err)
	}
	scanned := gosecDirs(t, root, strings.Fields(string(raw)))

	want := map[string]bool{}
	for _, d := range goList(t, root, "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", ".") {
		want[rel(t, root, d)] = true // what the binary is built from
	}
	for _, d := range goList(t, root, "-f", "{{.Dir}}", "./client/...") {
		want[rel(t, root, d)] = true // what people copy
	}
	for _, d := range slices.Sorted(maps.Keys(want)) {
		if !scanned[d] {
			t.Errorf("%s ships but gosec does not scan it", d)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(scanned)) {
		if !want[d] {
			t.Errorf("gosec scans %s, which is neither in the binary nor the client", d)
		}
	}
	if len(want) < 10 {
		t.Errorf("only %d packages ship? %v", len(want), want)
	}
}

// gosecDirs is the set of directories (relative to root, "." for the
// root) gosec scans given args, as its PackagePaths and -exclude-dir
// treat them.
func gosecDirs(t *testing.T, root string, args []string) map[string]bool {
	t.Helper()
	var excludes []*regexp.Regexp
	var paths []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-exclude-dir" || a == "--exclude-dir":
			i++
			excludes = append(excludes, regexp.MustCompile(`([\\/])?`+regexp.QuoteMeta(args[i])+`([\\/])?`))
		case strings.HasPrefix(strings.TrimLeft(a, "-"), "exclude-dir="):
			_, v, _ := strings.Cut(a, "=")
			excludes = append(excludes, regexp.MustCompile(`([\\/])?`+regexp.QuoteMeta(v)+`([\\/])?`))
		case !strings.HasPrefix(a, "-"):
			paths = append(paths, a)
		}
	}
	out := map[string]bool{}
	for _, p := range paths {
		if !strings.HasSuffix(p, "...") {
			out[filepath.Clean(p)] = true
			continue
		}
		base := filepath.Join(root, strings.TrimSuffix(p, "..."))
		_ = filepath.Walk(base, func(path string, info os.FileInfo, err error) error {
			if err != nil || filepath.Ext(path) != ".go" {
				return nil
			}
			d := rel(t, root, filepath.Dir(path))
			for _, ex := range excludes {
				if ex.MatchString(filepath.ToSlash(d)) {
					return nil
				}
			}
			out[d] = true
			return nil
		})
	}
	return out
}

// goList runs the real `go list` in dir and returns its lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(realGo(t), append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// realGo is the go command on PATH.
func realGo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	return p
}

func rel(t *testing.T, root, path string) string {
	t.Helper()
	r, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
