package checks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// mayImport is the template's layering, as code: each folder holding Go
// code (not its tests), and the folders of this repository it may import.
// Imports point one way: handlers → repo → cache, repo → db; only the
// composition root wires everything. A folder missing here is an error, so
// a new package has to take a place in the table. docs/architecture.md
// explains the arrows in prose.
var mayImport = map[string][]string{
	".":                        {"internal/app"},
	"internal/app":             {"*"}, // the composition root
	"handlers":                 {"repo", "middleware"},
	"middleware":               {},
	"repo":                     {"cache", "db", "internal/loglimit"},
	"cache":                    {"cache/internal/redislock", "internal/loglimit", "internal/redisconn", "internal/retryhint"},
	"cache/internal/redislock": {},
	"db":                       {"internal/breaker", "internal/retryhint"},
	"migrations":               {},
	"client":                   {},
	"client/examples/order":    {"client"},
	"internal/admin":           {"cache", "db", "internal/breaker", "internal/console", "internal/hotkeys", "middleware"},
	"internal/breaker":         {},
	"internal/config":          {"cache", "db", "handlers"}, // reads into each package's own setting types
	"internal/console":         {},
	"internal/hotkeys":         {},
	"internal/logbuf":          {},
	"internal/loglimit":        {},
	"internal/redisconn":       {"internal/breaker"},
	"internal/retryhint":       {},
	"internal/server":          {},
	"internal/telemetry":       {"cache", "db", "internal/breaker", "internal/config", "internal/loglimit", "middleware"},
	// Test infrastructure: used by tests only, never by the app.
	"internal/testkit/dbtest":       {"db", "migrations", "internal/breaker", "internal/testkit/netproxy"},
	"internal/testkit/metricstext":  {},
	"internal/testkit/netproxy":     {},
	"internal/testkit/optional":     {},
	"internal/testkit/pgbouncer":    {"internal/testkit/optional"},
	"internal/testkit/pgfailover":   {"internal/testkit/optional"},
	"internal/testkit/rediscluster": {"cache"},
	// The lab drives built binaries over HTTP; it links none of the app.
	"tools/lab": {"client", "internal/server", "internal/testkit/metricstext", "internal/testkit/netproxy", "internal/testkit/pgfailover", "internal/testkit/rediscluster"},
}

// ginImporters are the only folders that may import gin: the edge.
var ginImporters = []string{"internal/app", "handlers", "middleware", "tools/lab"}

// TestLayoutImportsPointOneWay: every import in the app module's non-test
// Go files is allowed by mayImport, every folder has a row, and only the
// edge imports gin.
func TestLayoutImportsPointOneWay(t *testing.T) {
	root := repoRoot(t)
	module := appModule(t, root)
	for dir, imports := range treeImports(t, root) {
		allowed, ok := mayImport[dir]
		if !ok {
			t.Errorf("%s/ holds Go code but has no row in mayImport (layout_test.go)", dir)
			continue
		}
		for _, imp := range imports {
			switch {
			case imp == "github.com/gin-gonic/gin" && !slices.Contains(ginImporters, dir):
				t.Errorf("%s imports gin; only %v may", dir, ginImporters)
			case strings.HasPrefix(imp, module+"/"):
				rel := strings.TrimPrefix(imp, module+"/")
				if !slices.Contains(allowed, "*") && !slices.Contains(allowed, rel) {
					t.Errorf("%s imports %s, which mayImport does not allow", dir, rel)
				}
			}
		}
	}
}

// TestLayoutCheckCanFail: a forbidden arrow (cache → repo) is caught.
func TestLayoutCheckCanFail(t *testing.T) {
	if slices.Contains(mayImport["cache"], "repo") {
		t.Fatal("the table lets the generic cache import repo")
	}
	for dir, allowed := range mayImport {
		if dir != "internal/app" && slices.Contains(allowed, "*") {
			t.Errorf("%s may import everything; only the composition root may", dir)
		}
	}
}

// e2eMayImport is what the end-to-end tests (internal/e2e/, test files only) may
// import from the module: the app only through internal/app's one export,
// Main, as the binary runs it; the public packages and a few internal types
// to read answers (admin JSON, signed entries); the test kit.
var e2eMayImport = []string{"internal/app", "client", "handlers", "repo", "cache", "migrations",
	"internal/breaker", "internal/console", "internal/testkit/*"}

// TestLayoutE2EDrivesTheAppFromOutside: internal/e2e/ imports only e2eMayImport and
// uses nothing of internal/app but Main, so a scenario never reaches into
// the composition root (its unit tests live beside it).
func TestLayoutE2EDrivesTheAppFromOutside(t *testing.T) {
	root := repoRoot(t)
	module := appModule(t, root)
	files, _ := filepath.Glob(filepath.Join(root, "internal", "e2e", "*.go"))
	if len(files) < 10 {
		t.Fatalf("found %d Go files in internal/e2e/; want the end-to-end tests", len(files))
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		appName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			if !slices.ContainsFunc(e2eMayImport, func(a string) bool {
				return a == rel || strings.HasSuffix(a, "/*") && strings.HasPrefix(rel, strings.TrimSuffix(a, "*"))
			}) {
				t.Errorf("%s imports %s, which e2eMayImport does not allow", filepath.Base(path), rel)
			}
			if rel == "internal/app" {
				appName = "app"
				if imp.Name != nil {
					appName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && appName != "" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == appName && sel.Sel.Name != "Main" {
					t.Errorf("%s uses app.%s; e2e runs the app through app.Main only", filepath.Base(path), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// appModule reads the module path from the app's go.mod, so a renamed copy
// is checked under its own name.
func appModule(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	return string(m[1])
}

// treeImports is every folder's imports from its non-test Go files, this
// checks module and testdata left out.
func treeImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (rel == "tools/checks" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "."):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("read Go code in %d folders under %s; want the whole tree", len(out), root)
	}
	return out
}
