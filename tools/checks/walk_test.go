package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md walks a cold read from the handler to the database
// (its section walkHeading) naming each step as `dir/file.go` Name or
// `dir/file.go` Type.Method. A refactor that moves or renames a step must
// take the walk with it: each such name must be declared in that file.

const (
	walkDoc     = "docs/architecture.md"
	walkHeading = "## The read path"
)

var walkRef = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.go)` ((?:[A-Za-z_][A-Za-z0-9_]*\\.)?[A-Za-z_][A-Za-z0-9_]*)")

// walkErrors returns each `file.go` Name of the walk in doc whose name
// the file does not declare, and an error when the walk names none.
func walkErrors(root, doc string) []error {
	src := newSourceIndex(root)
	var errs []error
	n, in := 0, false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, walkHeading)
		}
		if !in {
			continue
		}
		for _, m := range walkRef.FindAllStringSubmatch(line, -1) {
			n++
			f, err := src.file(m[1])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", walkDoc, i+1, err))
				continue
			}
			if !f.decls[m[2]] {
				errs = append(errs, fmt.Errorf("%s:%d: %s declares no %s", walkDoc, i+1, m[1], m[2]))
			}
		}
	}
	if n == 0 {
		errs = append(errs, fmt.Errorf("%s: %q names no `file.go` Name", walkDoc, walkHeading))
	}
	return errs
}

// TestArchitectureWalkNamesRealCode: every step of the read path names
// code that exists.
func TestArchitectureWalkNamesRealCode(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, walkDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range walkErrors(root, string(doc)) {
		t.Error(err)
	}
}

// TestArchitectureWalkCheckCatchesMistakes: a renamed function, a method
// on the wrong type, a moved file and a walk naming no code are each
// reported; a name outside the walk's section is not checked.
func TestArchitectureWalkCheckCatchesMistakes(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		name, doc string
		wantErr   bool
	}{
		{"fine", "`repo/products.go` Products.Get, `cache/fetch.go` Cache.fetch", false},
		{"renamed", "`handlers/products.go` setCacheHeaders", true},
		{"wrong type", "`repo/products.go` Cache.Get", true},
		{"moved file", "`products.go` Products.Get", true},
		{"names no step", "the handler calls the repository", true},
		{"outside the walk", "`repo/products.go` Products.Get\n## Layout\n`repo/products.go` NoSuch", false},
	}
	for _, c := range cases {
		errs := walkErrors(root, walkHeading+"\n"+c.doc)
		if c.wantErr != (len(errs) > 0) {
			t.Errorf("%s: %q gave %v", c.name, c.doc, errs)
		}
	}
}
