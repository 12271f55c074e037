package checks

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// TestLoadtestScriptsParse syntax-checks the k6 scripts with esbuild's Go
// parser (no node, no k6 needed): each is parsed as an ES module; k6's own
// modules are never resolved, only the syntax is checked.
func TestLoadtestScriptsParse(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "tools", "loadtest", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(scripts))
	for i, s := range scripts {
		names[i] = filepath.Base(s)
	}
	for _, want := range []string{"stampede.js", "overload.js", "mixed.js"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/loadtest/%s is missing", want)
		}
	}
	for _, s := range scripts {
		src, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"from 'k6/http'", "export const options", "thresholds", "scenarios", "__ENV.BASE_URL"} {
			if !bytes.Contains(src, []byte(want)) {
				t.Errorf("%s does not contain %q", s, want)
			}
		}
		if errs := parseJS(filepath.Base(s), string(src)); len(errs) > 0 {
			t.Errorf("%s does not parse:\n%s", s, strings.Join(errs, "\n"))
		}
	}
}

// parseJS parses src as an ES module and returns esbuild's errors.
func parseJS(name, src string) []string {
	res := api.Transform(src, api.TransformOptions{
		Loader: api.LoaderJS, Format: api.FormatESModule, Sourcefile: name, LogLevel: api.LogLevelSilent,
	})
	var out []string
	for _, m := range res.Errors {
		where := name
		if m.Location != nil {
			where = fmt.Sprintf("%s:%d:%d", name, m.Location.Line, m.Location.Column)
		}
		out = append(out, where+": "+m.Text)
	}
	return out
}

// TestParseJSRejectsBrokenSyntax: the parser the check relies on reports a
// syntax error (a check that accepts everything proves nothing).
func TestParseJSRejectsBrokenSyntax(t *testing.T) {
	tests := []struct {
		src    string
		wantOK bool
	}{
		{"import http from 'k6/http';\nexport const options = { vus: 1 };\nexport default function () { http.get(__ENV.BASE_URL); }\n", true},
		{"export const options = { vus: 1 ;\n", false},
		{"export default function () { if (x) { }\n", false},
	}
	for _, tt := range tests {
		errs := parseJS("t.js", tt.src)
		if (len(errs) == 0) != tt.wantOK {
			t.Errorf("parseJS(%q): errors %v, want ok %v", tt.src, errs, tt.wantOK)
		}
	}
}
