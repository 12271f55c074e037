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

//go:embed index.html uPlot.iife.min.js uPlot.min.css uPlot.LICENSE
var files embed.FS

// Handler serves the console page and its chart library.
func Handler() http.Handler {
	return http.FileServerFS(files)
}
