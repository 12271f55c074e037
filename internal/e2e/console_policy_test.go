package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-guard/api/internal/console"
)

// TestConsolePageFitsItsPolicy: the console's Content-Security-Policy
// allows no inline code or style, so the page must have none — no inline
// <script> or <style>, no style= or on…= attributes — and every file it
// loads must be served with the type its tag needs (nosniff refuses a
// script served as anything else). Without Chromium this is the check that
// the page still works under its policy.
func TestConsolePageFitsItsPolicy(t *testing.T) {
	srv := httptest.NewServer(console.Handler())
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/")
	if resp.Header.Get("Content-Security-Policy") != console.Policy {
		t.Errorf("Content-Security-Policy %q, want console.Policy", resp.Header.Get("Content-Security-Policy"))
	}
	for _, bad := range []struct{ what, re string }{
		{"an inline script", `<script(\s[^>]*)?>\s*[^<\s]`},
		{"a script without src", `<script(?:\s+(?:[a-z-]+(?:="[^"]*")?))*\s*>`},
		{"a <style> element", `<style[\s>]`},
		{"a style attribute", `\sstyle\s*=`},
		{"an event handler attribute", `\son[a-z]+\s*=`},
		{"a javascript: URL", `javascript:`},
	} {
		if m := regexp.MustCompile(bad.re).FindString(page); m != "" && !strings.Contains(m, "src=") {
			t.Errorf("the page has %s (%q): the policy would block it", bad.what, m)
		}
	}
	refs := regexp.MustCompile(`<(script) src="([^"]+)"|<link rel="(stylesheet)" href="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 4 {
		t.Fatalf("the page loads %d files, want its scripts and styles (%v)", len(refs), refs)
	}
	for _, r := range refs {
		path, want := r[2], "text/javascript"
		if r[3] != "" {
			path, want = r[4], "text/css"
		}
		resp, _ := get("/" + path)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, want) {
			t.Errorf("%s: %d %q, want 200 %s", path, resp.StatusCode, ct, want)
		}
	}
}
