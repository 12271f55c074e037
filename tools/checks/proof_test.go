package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/proof.md holds the proof table: one row per protection, naming the
// test that fails without it (`file_test.go:TestName`) and the code that
// was removed to watch it fail. These tests keep the table and the code in
// step: a renamed, moved or misspelled test, a row with no test, or a
// "removed" cell that names a file, function or line of code the tree no
// longer has fails here.

// proofDoc is the table's file, from the repository root.
const proofDoc = "docs/proof.md"

// proofCols are the table's columns, in order.
var proofCols = []string{"protection", "what it prevents", "setting (on/off)", "test that fails without it", "removed to see it fail", "`make lab`"}

// The columns the check reads.
const (
	colTests   = 3
	colRemoved = 4
	colLab     = 5
)

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

// proofTable returns the rows of the first table in doc whose header is
// proofCols.
func proofTable(doc string) ([]proofRow, error) {
	header := "| " + strings.Join(proofCols, " | ") + " |"
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == header {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%s has no table with the header %q", proofDoc, header)
	}
	var rows []proofRow
	for i := start + 2; i < len(lines); i++ { // past the header and its separator
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, proofRow{line: i + 1, cells: cells})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: the proof table has no rows", proofDoc)
	}
	return rows, nil
}

// checkProofTable returns every mismatch between the table in doc and the
// code under root: a row without a test, a test file or function that does
// not exist, an unknown lab experiment, and a "removed" cell naming code
// that does not exist (see checkRemoved).
func checkProofTable(root, doc string) []error {
	rows, err := proofTable(doc)
	if err != nil {
		return []error{err}
	}
	src := newSourceIndex(root)
	labSrc, err := os.ReadFile(filepath.Join(root, "tools", "lab", "main.go"))
	if err != nil {
		return []error{err}
	}
	labs := map[string]bool{}
	for _, m := range labName.FindAllStringSubmatch(string(labSrc), -1) {
		labs[m[1]] = true
	}
	var errs []error
	seen := map[string]int{}
	for _, r := range rows {
		at := fmt.Sprintf("%s:%d", proofDoc, r.line)
		if len(r.cells) != len(proofCols) {
			errs = append(errs, fmt.Errorf("%s: %d cells, want %d", at, len(r.cells), len(proofCols)))
			continue
		}
		name := r.cells[0]
		at += " (" + name + ")"
		if prev, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("%s: protection already has a row (line %d)", at, prev))
		}
		seen[name] = r.line
		for i, c := range r.cells {
			if c == "" {
				errs = append(errs, fmt.Errorf("%s: column %q is empty", at, proofCols[i]))
			}
		}
		errs = append(errs, checkTests(at, r.cells[colTests], src)...)
		errs = append(errs, checkRemoved(at, r.cells[colRemoved], src)...)
		for _, m := range labRef.FindAllStringSubmatch(r.cells[colLab], -1) {
			if !labs[m[1]] {
				errs = append(errs, fmt.Errorf("%s: no lab experiment %q in tools/lab/main.go", at, m[1]))
			}
		}
	}
	return errs
}

// checkTests: the cell names at least one test, and each is a top-level
// func of its file.
func checkTests(at, cell string, src *sourceIndex) []error {
	refs := testRef.FindAllStringSubmatch(cell, -1)
	if len(refs) == 0 {
		return []error{fmt.Errorf("%s: no `file_test.go:TestName` in %q", at, cell)}
	}
	var errs []error
	for _, ref := range refs {
		file, fn := ref[1], ref[2]
		f, err := src.file(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		if !f.funcs[fn] {
			errs = append(errs, fmt.Errorf("%s: %s declares no func %s", at, file, fn))
		}
	}
	return errs
}

// TestProofTableMatchesCode: every row of docs/proof.md names a test that
// exists, lab experiments that exist, and removed code that exists.
func TestProofTableMatchesCode(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, proofDoc))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := proofTable(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkProofTable(root, string(doc)) {
		t.Error(err)
	}
	t.Logf("%d protections in the proof table", len(rows))
}
