package checks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// The "removed to see it fail" cell says what was deleted or changed, in
// this form:
//
//	`cache/load.go` flight: the single-flight key … (`DoChan(key, …)` → `DoChan(key+rand.Text(), …)`)
//
// The rule it is held to:
//
//   - a backticked path (`dir/file.go`) is a file of the tree, from the
//     repository root; every cell names at least one, unless it says
//     "not verified";
//   - a name right after a path and before a colon (`file.go` flight:) is
//     declared at the top level of that file: a func, a method, a type, a
//     const or a var;
//   - every identifier in any other backticked span is in the code of the
//     last file named before it — as an identifier or inside a string
//     literal (SQL, Lua), comments excluded — except Go's keywords and
//     predeclared names (`if false`), and except a span after "→" in the
//     same phrase (`a` → `b`, → plain `DEL`), which is the replacement,
//     not the code that exists;
//   - a span right before "→" (`a` → `b`) is the code as it was: it is in
//     that file as quoted, white space aside, each part between "…".

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	filePath = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\.(go|sql|lua|yaml|yml|js|sh)$`)
	declName = regexp.MustCompile(`^ ([A-Za-z_][A-Za-z0-9_]*):`)
	word     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// checkRemoved applies the rule above to one cell.
func checkRemoved(at, cell string, src *sourceIndex) []error {
	if strings.HasPrefix(cell, "not verified") {
		return nil
	}
	var errs []error
	var scope *sourceFile
	scopeName, files := "", 0
	for _, m := range codeSpan.FindAllStringSubmatchIndex(cell, -1) {
		span, before, after := cell[m[2]:m[3]], cell[:m[0]], cell[m[1]:]
		if filePath.MatchString(span) {
			files++
			f, err := src.file(span)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: removed: %w", at, err))
				scope, scopeName = nil, ""
				continue
			}
			scope, scopeName = f, span
			if d := declName.FindStringSubmatch(after); d != nil && !f.decls[d[1]] {
				errs = append(errs, fmt.Errorf("%s: removed: %s declares no %s", at, span, d[1]))
			}
			continue
		}
		if replacement(before) {
			continue
		}
		if scope == nil {
			if files == 0 { // else the file's own error is reported
				errs = append(errs, fmt.Errorf("%s: removed: code `%s` before any file", at, span))
			}
			continue
		}
		for _, loc := range word.FindAllStringIndex(span, -1) {
			w := span[loc[0]:loc[1]]
			if loc[0] > 0 && isWordByte(span[loc[0]-1]) {
				continue // the tail of a number or code such as 57P01
			}
			if token.Lookup(w).IsKeyword() || types.Universe.Lookup(w) != nil {
				continue
			}
			if !scope.words[w] {
				errs = append(errs, fmt.Errorf("%s: removed: `%s`: %s has no %s", at, span, scopeName, w))
			}
		}
		// Code that was replaced (`a` → `b`) is quoted from the file: the
		// words alone let a quote drift from its code (`b.wait` matched a
		// field of another file's type), so it must be there as quoted,
		// each part between "…" as it is. Other spans may describe what
		// was added (`false &&`) or what was seen (`57P01`).
		if !strings.HasPrefix(strings.TrimSpace(after), "→") {
			continue
		}
		for _, part := range strings.Split(span, "…") {
			if part = oneSpaced(part); part != "" && !strings.Contains(scope.text, part) {
				errs = append(errs, fmt.Errorf("%s: removed: `%s`: %s has no %q", at, span, scopeName, part))
			}
		}
	}
	if files == 0 {
		errs = append(errs, fmt.Errorf("%s: removed: names no file (`dir/file.go`): %q", at, cell))
	}
	return errs
}

// replacement says whether a span that follows before is what the code
// was changed to: "→" comes before it, with no other span, colon,
// semicolon or parenthesis between.
func replacement(before string) bool {
	i := strings.LastIndex(before, "→")
	return i >= 0 && !strings.ContainsAny(before[i:], "`;:(")
}

// oneSpaced trims s and makes each run of white space in it one space.
func oneSpaced(s string) string { return strings.Join(strings.Fields(s), " ") }

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// recvType is the name of a method's receiver type: T for T, *T, T[P].
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// sourceFile is what the check knows of one file of the tree.
type sourceFile struct {
	text  string          // the source with every run of white space one space
	funcs map[string]bool // top-level funcs without a receiver
	decls map[string]bool // top-level funcs, methods (M and T.M), types, consts, vars
	words map[string]bool // identifiers and words in string literals, not comments
}

// sourceIndex reads the tree's files on demand, once each.
type sourceIndex struct {
	root  string
	files map[string]*sourceFile
}

func newSourceIndex(root string) *sourceIndex {
	return &sourceIndex{root: root, files: map[string]*sourceFile{}}
}

// file returns rel, a slash-separated path from the repository root.
func (s *sourceIndex) file(rel string) (*sourceFile, error) {
	if f, ok := s.files[rel]; ok {
		return f, nil
	}
	if path.Clean(rel) != rel || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s: not a path from the repository root", rel)
	}
	src, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	f := &sourceFile{text: oneSpaced(string(src)), funcs: map[string]bool{}, decls: map[string]bool{}, words: map[string]bool{}}
	if strings.HasSuffix(rel, ".go") {
		if err := f.readGo(rel, src); err != nil {
			return nil, err
		}
	} else {
		for _, w := range word.FindAllString(string(src), -1) {
			f.words[w] = true
		}
	}
	s.files[rel] = f
	return f, nil
}

// readGo fills f from a Go file: its declarations with go/parser, its
// words with go/scanner (which drops the comments).
func (f *sourceFile) readGo(rel string, src []byte) error {
	parsed, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, decl := range parsed.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			f.decls[d.Name.Name] = true
			if d.Recv == nil {
				f.funcs[d.Name.Name] = true
			} else if t := recvType(d.Recv.List[0].Type); t != "" {
				f.decls[t+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					f.decls[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						f.decls[n.Name] = true
					}
				}
			}
		}
	}
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile(rel, -1, len(src)), src, nil, 0)
	for {
		_, tok, lit := sc.Scan()
		switch tok {
		case token.EOF:
			return nil
		case token.IDENT:
			f.words[lit] = true
		case token.STRING, token.CHAR:
			for _, w := range word.FindAllString(lit, -1) {
				f.words[w] = true
			}
		}
	}
}
