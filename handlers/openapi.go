package handlers

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the OpenAPI 3.1 description of the HTTP API (openapi.yaml
// beside this file), embedded so the binary serves the document that
// matches it.
//
//go:embed openapi.yaml
var OpenAPI []byte

// RegisterOpenAPI serves OpenAPI at GET (and HEAD) /openapi.yaml: clients
// and tools read the contract from the running version itself.
func RegisterOpenAPI(r *gin.Engine) {
	getHead(r, "/openapi.yaml", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/yaml", OpenAPI)
	})
}
