package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// RegisterOpenAPI serves doc, the API's OpenAPI description, at
// GET (and HEAD) /openapi.yaml: clients and tools read the contract from
// the running version itself.
func RegisterOpenAPI(r *gin.Engine, doc []byte) {
	getHead(r, "/openapi.yaml", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/yaml", doc)
	})
}
