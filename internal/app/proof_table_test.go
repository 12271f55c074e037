package app

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's proof table: one row per protection, naming the test that
// fails without it as `file_test.go:TestName`. These tests keep the table
// and the suite in step: a renamed, moved or misspelled test, or a row with
// no test, fails here.

const proofHeading = "## Proof table"

// proofCols are the table's columns, in order.
var proofCols = []string{"protection", "what it prevents", "setting (on/off)", "test that fails without it", "removed to see it fail", "`make lab`"}

var (
	testRef = regexp.MustCompile(`([A-Za-z0-9_./-]+_test\.go):((?:Test|Fuzz)[A-Za-z0-9_]*)`)
	labRef  = regexp.MustCompile("`([a-z-]+)`")
	labName = regexp.MustCompile(`\{"([a-z-]+)", \(\*Lab\)\.`)
)

// proofRow is one row of the table.
type proofRow struct {
	line  int
	cells []string
}

// proofTable returns the rows of the table under proofHeading in readme.
func proofTable(readme string) ([]proofRow, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == proofHeading {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("README has no %q section", proofHeading)
	}
	var rows []proofRow
	header := true
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 || !header {
				break // the table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		switch {
		case header:
			if got := strings.Join(cells, " | "); got != strings.Join(proofCols, " | ") {
				return nil, fmt.Errorf("README:%d: proof table header %q, want %q", i+1, got, strings.Join(proofCols, " | "))
			}
			header = false
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// the separator line
		default:
			rows = append(rows, proofRow{line: i + 1, cells: cells})
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("README's %q section has no table rows", proofHeading)
	}
	return rows, nil
}

// checkProofTable returns every mismatch between the table and the code
// under root: a row without a test, a test file that does not exist, a
// test function the file does not declare, an unknown lab experiment.
func checkProofTable(root, readme string) []error {
	rows, err := proofTable(readme)
	if err != nil {
		return []error{err}
	}
	var errs []error
	decls := map[string]map[string]bool{} // file → top-level functions
	funcs := func(file string) (map[string]bool, error) {
		if d, ok := decls[file]; ok {
			return d, nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		d := map[string]bool{}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				d[fn.Name.Name] = true
			}
		}
		decls[file] = d
		return d, nil
	}
	labSrc, err := os.ReadFile(filepath.Join(root, "tools", "lab", "main.go"))
	if err != nil {
		return []error{err}
	}
	labs := map[string]bool{}
	for _, m := range labName.FindAllStringSubmatch(string(labSrc), -1) {
		labs[m[1]] = true
	}
	seen := map[string]int{}
	for _, r := range rows {
		if len(r.cells) != len(proofCols) {
			errs = append(errs, fmt.Errorf("README:%d: %d cells, want %d", r.line, len(r.cells), len(proofCols)))
			continue
		}
		name := r.cells[0]
		if prev, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("README:%d: protection %q already has a row (line %d)", r.line, name, prev))
		}
		seen[name] = r.line
		for i, c := range r.cells {
			if c == "" {
				errs = append(errs, fmt.Errorf("README:%d (%s): column %q is empty", r.line, name, proofCols[i]))
			}
		}
		refs := testRef.FindAllStringSubmatch(r.cells[3], -1)
		if len(refs) == 0 {
			errs = append(errs, fmt.Errorf("README:%d (%s): no `file_test.go:TestName` in %q", r.line, name, r.cells[3]))
		}
		for _, ref := range refs {
			file, fn := ref[1], ref[2]
			d, err := funcs(file)
			if err != nil {
				errs = append(errs, fmt.Errorf("README:%d (%s): %s: %v", r.line, name, file, err))
				continue
			}
			if !d[fn] {
				errs = append(errs, fmt.Errorf("README:%d (%s): %s declares no func %s", r.line, name, file, fn))
			}
		}
		for _, m := range labRef.FindAllStringSubmatch(r.cells[5], -1) {
			if !labs[m[1]] {
				errs = append(errs, fmt.Errorf("README:%d (%s): no lab experiment %q in lab/main.go", r.line, name, m[1]))
			}
		}
	}
	return errs
}

// TestProofTableNamesRealTests: every row of the README's proof table
// names at least one test, and every test it names exists.
func TestProofTableNamesRealTests(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := proofTable(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkProofTable("../..", string(readme)) {
		t.Error(err)
	}
	t.Logf("%d protections in the proof table", len(rows))
}

// TestProofTableCheckCatchesMistakes: the check above can fail. A
// misspelled test name, a missing file, a row without a test and an
// unknown lab experiment are each reported.
func TestProofTableCheckCatchesMistakes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	rows, err := proofTable(readme)
	if err != nil {
		t.Fatal(err)
	}
	first := rows[0].cells[3]
	ref := testRef.FindStringSubmatch(first)
	if ref == nil {
		t.Fatalf("first row names no test: %q", first)
	}
	mutate := func(old, new string) string {
		i := strings.Index(readme, proofHeading)
		return readme[:i] + strings.Replace(readme[i:], old, new, 1)
	}
	cases := map[string]string{
		"misspelled test": mutate(ref[0], ref[1]+":"+ref[2]+"x"),
		"missing file":    mutate(ref[0], "nosuch_test.go:"+ref[2]),
		"no test":         mutate("| "+first+" |", "| (none) |"),
	}
	if m := labRef.FindString(rows[0].cells[5]); m != "" {
		cases["unknown lab experiment"] = mutate("| "+rows[0].cells[5]+" |", "| `no-such-experiment` |")
	}
	for name, doc := range cases {
		if doc == readme {
			t.Errorf("%s: the mutation changed nothing", name)
			continue
		}
		if errs := checkProofTable(".", doc); len(errs) == 0 {
			t.Errorf("%s: the check found nothing wrong", name)
		}
	}
}
