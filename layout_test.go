package main

import (
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

const modulePath = "github.com/stampede-guard/api"

// ginImporters are the only packages that may import gin: the edge.
var ginImporters = []string{".", "handlers", "middleware", "lab"}

// TestLayoutTableMatchesImports: README's Layout table says, per folder,
// which of this repository's packages it may import; every import in the
// tree's non-test Go files must be allowed there, every folder holding Go
// code must have a row, and only the edge imports gin.
func TestLayoutTableMatchesImports(t *testing.T) {
	allowed := layoutTable(t)
	imports := treeImports(t)
	for dir, deps := range imports {
		may, ok := allowed[dir]
		if !ok {
			t.Errorf("README Layout: no row for %s/", dir)
			continue
		}
		for _, dep := range deps {
			switch {
			case dep == "github.com/gin-gonic/gin":
				if !slices.Contains(ginImporters, dir) {
					t.Errorf("%s imports gin; only %v may", dir, ginImporters)
				}
			case strings.HasPrefix(dep, modulePath+"/"):
				rel := strings.TrimPrefix(dep, modulePath+"/")
				if !may(rel) {
					t.Errorf("%s imports %s, which README's Layout table does not allow", dir, rel)
				}
			}
		}
	}
}

// layoutTable reads the table into folder → may-it-import.
func layoutTable(t *testing.T) map[string]func(string) bool {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## Layout\n")
	if start < 0 {
		t.Fatal("README has no Layout section")
	}
	section := text[start:]
	if end := strings.Index(section[1:], "\n## "); end > 0 {
		section = section[:end+1]
	}
	folder := regexp.MustCompile("`([^`]+)`")
	out := map[string]func(string) bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "folder" {
			continue
		}
		may := allowList(cells[3])
		for _, m := range folder.FindAllStringSubmatch(cells[1], -1) {
			name := strings.TrimSuffix(strings.Fields(m[1])[0], "/")
			out[name] = may
		}
	}
	if len(out) < 10 {
		t.Fatalf("README Layout table: read %d rows, want the whole tree", len(out))
	}
	return out
}

// allowList reads a "may import" cell: "—", "everything below", or a
// comma-separated list of folders (a trailing "…" allows a whole subtree;
// words in parentheses are comments).
func allowList(cell string) func(string) bool {
	cell = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(cell, "")
	cell = strings.TrimSpace(cell)
	if cell == "everything below" {
		return func(string) bool { return true }
	}
	var names []string
	for _, n := range strings.Split(cell, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "—" {
			names = append(names, n)
		}
	}
	return func(pkg string) bool {
		for _, n := range names {
			if base, ok := strings.CutSuffix(n, "/…"); ok && strings.HasPrefix(pkg, base+"/") || n == pkg {
				return true
			}
		}
		return false
	}
}

// treeImports is every folder's imports from its non-test Go files, the
// checks module and testdata left out.
func treeImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == "checks" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "."):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
