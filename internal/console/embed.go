// Package console is the operator's live view of the protections: one
// embedded HTML page, no front-end build step, that polls the admin JSON
// feed every second and charts what each guard did. It protects nothing
// itself; it makes the protections visible.
//
// The charts use uPlot 1.6.32 (MIT, uPlot.LICENSE), embedded as shipped in
// its npm package (dist/uPlot.iife.min.js, dist/uPlot.min.css): no CDN, so
// the console works on a machine with no way out.
package console

import (
	"embed"
	"net/http"
)

//go:embed index.html console.js console.css uPlot.iife.min.js uPlot.min.css uPlot.LICENSE
var files embed.FS

// Policy is the console's Content-Security-Policy: its own scripts,
// styles and feed only (no inline code, no eval, nothing from elsewhere),
// and never inside a frame (clickjacking). The page keeps its code and
// styles in files so that the policy needs no 'unsafe-inline'.
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console page and its chart library, every answer
// under Policy, never framed (X-Frame-Options for browsers that predate
// frame-ancestors) and never sniffed as another type.
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", Policy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		fs.ServeHTTP(w, r)
	})
}
