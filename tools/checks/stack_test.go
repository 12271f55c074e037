package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// designCard is the stack the template promises, as code: each package,
// the module go.mod must require for it (directly), and the import path
// that code on the request path must use. docs/stack.md says what each
// does here and where; this table keeps both true.
var designCard = []stackPackage{
	{module: "github.com/gin-gonic/gin", imports: "github.com/gin-gonic/gin"},
	{module: "github.com/jackc/pgx/v5", imports: "github.com/jackc/pgx/v5/pgxpool"},
	{module: "github.com/redis/go-redis/v9", imports: "github.com/redis/go-redis/v9"},
	{module: "github.com/sony/gobreaker/v2", imports: "github.com/sony/gobreaker/v2"},
	{module: "golang.org/x/time", imports: "golang.org/x/time/rate"},
	{module: "github.com/ulule/limiter/v3", imports: "github.com/ulule/limiter/v3"},
}

// requestPath are the folders whose non-test code serves requests (with
// their subfolders): an import only from tools, tests or test
// infrastructure does not count.
var requestPath = []string{"handlers", "middleware", "repo", "cache", "db", "internal/app", "internal/breaker", "internal/redisconn"}

type stackPackage struct {
	module  string // required by go.mod
	imports string // this package or one under it, imported on the request path
}

// TestStackIsTheDesignCard: each of the six design-card packages is
// required by the app's go.mod, imported by non-test code on the request
// path, and named in docs/stack.md.
func TestStackIsTheDesignCard(t *testing.T) {
	root := repoRoot(t)
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "stack.md"))
	if err != nil {
		t.Fatalf("the stack's table: %v", err)
	}
	for _, p := range stackProblems(designCard, string(goMod), treeImports(t, root), string(doc)) {
		t.Error(p)
	}
}

// TestStackCheckCanFail: a package missing from go.mod, from the request
// path's imports or from the doc is reported (a check that accepts
// everything proves nothing); an import from outside the request path or a
// requirement marked indirect does not count.
func TestStackCheckCanFail(t *testing.T) {
	card := []stackPackage{{module: "example.com/lib/v2", imports: "example.com/lib/v2/sub"}}
	goMod := "module x\n\nrequire (\n\texample.com/lib/v2 v2.1.0\n)\n"
	onPath := map[string][]string{"cache": {"context", "example.com/lib/v2/sub"}}
	doc := "| `example.com/lib/v2` | … |"
	tests := []struct {
		name    string
		goMod   string
		imports map[string][]string
		doc     string
		want    string // "" = no problem
	}{
		{"all there", goMod, onPath, doc, ""},
		{"single-line require", "module x\nrequire example.com/lib/v2 v2.1.0\n", onPath, doc, ""},
		{"left go.mod", "module x\n", onPath, doc, "go.mod does not require example.com/lib/v2"},
		{"only indirect", "module x\nrequire example.com/lib/v2 v2.1.0 // indirect\n", onPath, doc, "go.mod does not require example.com/lib/v2"},
		{"a longer module name is not it", "module x\nrequire example.com/lib/v2x v2.1.0\n", onPath, doc, "go.mod does not require example.com/lib/v2"},
		{"not imported", goMod, map[string][]string{"cache": {"context"}}, doc, "no non-test code on the request path imports example.com/lib/v2/sub"},
		{"imported by tools only", goMod, map[string][]string{"tools/lab": {"example.com/lib/v2/sub"}}, doc, "no non-test code on the request path imports"},
		{"imported by a lookalike folder", goMod, map[string][]string{"cachetools": {"example.com/lib/v2/sub"}}, doc, "no non-test code on the request path imports"},
		{"a subpackage counts", goMod, map[string][]string{"internal/app": {"example.com/lib/v2/sub/deeper"}}, doc, ""},
		{"not in the doc", goMod, onPath, "nothing", "docs/stack.md does not name example.com/lib/v2"},
	}
	for _, tt := range tests {
		got := stackProblems(card, tt.goMod, tt.imports, tt.doc)
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%s: problems %q, want none", tt.name, got)
		case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
			t.Errorf("%s: problems %q, want one containing %q", tt.name, got, tt.want)
		}
	}
}

// stackProblems lists how the code, go.mod and doc break the card.
func stackProblems(card []stackPackage, goMod string, imports map[string][]string, doc string) []string {
	var out []string
	for _, p := range card {
		required := regexp.MustCompile(`(?m)^(?:require\s+)?\s*` + regexp.QuoteMeta(p.module) + `\s+v\S+\s*$`)
		if !required.MatchString(goMod) {
			out = append(out, "go.mod does not require "+p.module+" directly (go get "+p.module+"@<version>): the stack promises it")
		}
		if users := importers(imports, p.imports); len(users) == 0 {
			out = append(out, "no non-test code on the request path imports "+p.imports+" (looked in "+strings.Join(requestPath, ", ")+")")
		}
		if !strings.Contains(doc, "`"+p.module+"`") {
			out = append(out, "docs/stack.md does not name "+p.module+" (as `"+p.module+"`)")
		}
	}
	return out
}

// importers are the request-path folders importing path or a package under it.
func importers(imports map[string][]string, path string) []string {
	var out []string
	for dir, imps := range imports {
		if !onRequestPath(dir) {
			continue
		}
		if slices.ContainsFunc(imps, func(imp string) bool { return imp == path || strings.HasPrefix(imp, path+"/") }) {
			out = append(out, dir)
		}
	}
	return out
}

// onRequestPath reports whether dir is one of requestPath or under one.
func onRequestPath(dir string) bool {
	return slices.ContainsFunc(requestPath, func(p string) bool { return dir == p || strings.HasPrefix(dir, p+"/") })
}
