// Package console is the operator's live view of the protections: one
// embedded HTML page, no front-end build step, that polls the admin JSON
// feed every second and charts what each guard did. It protects nothing
// itself; it makes the protections visible.
package console

import (
	"embed"
	"net/http"
)

//go:embed index.html
var files embed.FS

// Handler serves the console page.
func Handler() http.Handler {
	return http.FileServerFS(files)
}
