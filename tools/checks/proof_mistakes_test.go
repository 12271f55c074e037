package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProofTableCheckCatchesMistakes: the check can fail. Each mistake is
// made in a copy of the real docs/proof.md, checked against the real tree,
// and must be reported; the unchanged copy must pass, so a report comes
// from the mistake and not from the setup.
func TestProofTableCheckCatchesMistakes(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, proofDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if errs := checkProofTable(root, doc); len(errs) > 0 {
		t.Fatalf("the real table fails already (TestProofTableMatchesCode says why): %v", errs[0])
	}
	rows, err := proofTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	row := firstRowWith(t, rows)
	line := strings.Join(row.cells, " | ")
	ref := testRef.FindStringSubmatch(row.cells[colTests])
	removed := row.cells[colRemoved]
	file := codeSpan.FindStringSubmatch(removed)[1]
	name := declName.FindStringSubmatch(removed[strings.Index(removed, file)+len(file)+1:])[1]
	code := codeSpan.FindAllStringSubmatch(removed, -1)[1][1]
	ident := word.FindString(code)

	// mutate replaces old by new in the chosen row only.
	mutate := func(old, new string) string {
		return strings.Replace(doc, line, strings.Replace(line, old, new, 1), 1)
	}
	cases := []struct{ name, doc string }{
		{"misspelled test", mutate(ref[0], ref[1]+":"+ref[2]+"x")},
		{"missing test file", mutate(ref[0], "nosuch_test.go:"+ref[2])},
		{"no test", mutate(row.cells[colTests], "(none)")},
		{"unknown lab experiment", mutate(row.cells[colLab], "`no-such-experiment`")},
		{"removed: a file that is gone", mutate("`"+file+"`", "`"+strings.TrimSuffix(file, ".go")+"_gone.go`")},
		{"removed: a path not from the root", mutate("`"+file+"`", "`"+filepath.Base(file)+"`")},
		{"removed: a function that is gone", mutate("`"+file+"` "+name+":", "`"+file+"` "+name+"Gone:")},
		{"removed: code that is gone", mutate("`"+code+"`", "`"+strings.Replace(code, ident, ident+"Gone", 1)+"`")},
		{"removed: no file named", mutate(removed, "the check deleted")},
		{"removed: replaced code not as in the file", replacedCodeDrifted(t, doc, rows)},
	}
	for _, c := range cases {
		if c.doc == doc {
			t.Errorf("%s: the mutation changed nothing", c.name)
			continue
		}
		if errs := checkProofTable(root, c.doc); len(errs) == 0 {
			t.Errorf("%s: the check found nothing wrong", c.name)
		} else {
			t.Logf("%s: %v", c.name, errs[0])
		}
	}
}

// firstRowWith returns the first row whose "removed" cell has the full
// form the mutations need: `file` Name: … `code` …, and a lab experiment.
func firstRowWith(t *testing.T, rows []proofRow) proofRow {
	t.Helper()
	for _, r := range rows {
		removed := r.cells[colRemoved]
		spans := codeSpan.FindAllStringSubmatchIndex(removed, -1)
		if len(spans) < 2 || !filePath.MatchString(removed[spans[0][2]:spans[0][3]]) ||
			declName.FindString(removed[spans[0][1]:]) == "" || replacement(removed[:spans[1][0]]) ||
			word.FindString(removed[spans[1][2]:spans[1][3]]) == "" || labRef.FindString(r.cells[colLab]) == "" {
			continue
		}
		return r
	}
	t.Fatal("no row of the form `file` Name: … `code` … with a lab experiment")
	return proofRow{}
}

// replacedCodeDrifted returns doc with the first quote of replaced code
// (`a` → `b`) changed without a new word (`a + 1`): only the literal
// check of quoted code can see it.
func replacedCodeDrifted(t *testing.T, doc string, rows []proofRow) string {
	t.Helper()
	for _, r := range rows {
		removed := r.cells[colRemoved]
		for _, m := range codeSpan.FindAllStringSubmatchIndex(removed, -1) {
			if strings.HasPrefix(strings.TrimSpace(removed[m[1]:]), "→") && !filePath.MatchString(removed[m[2]:m[3]]) {
				line := strings.Join(r.cells, " | ")
				drifted := removed[:m[3]] + " + 1" + removed[m[3]:]
				return strings.Replace(doc, line, strings.Replace(line, removed, drifted, 1), 1)
			}
		}
	}
	t.Fatal("no row quotes replaced code (`a` → `b`)")
	return doc
}
