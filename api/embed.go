// Package api holds the OpenAPI 3.1 description of the HTTP API, embedded
// so the binary serves the document that matches it (GET /openapi.yaml).
package api

import _ "embed"

// OpenAPI is api/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
