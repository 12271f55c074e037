package handlers_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"

	"github.com/stampede-guard/api/handlers"
)

// pendingKey marks an operation the interface requires that another branch adds to
// the router; the mark is refused once the router has the route.
const pendingKey = "x-pending"

var httpMethods = []string{"get", "head", "post", "put", "patch", "delete", "options"}

// openAPIDoc is handlers/openapi.yaml as plain maps.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(handlers.OpenAPI, &doc); err != nil {
		t.Fatalf("handlers/openapi.yaml: %v", err)
	}
	return doc
}

// operations maps "METHOD /path" to each operation of the document.
func operations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("handlers/openapi.yaml has no paths")
	}
	out := map[string]map[string]any{}
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			if slices.Contains(httpMethods, method) {
				out[strings.ToUpper(method)+" "+path] = op.(map[string]any)
			}
		}
	}
	return out
}

// routerRoutes lists the routes the app's router registers, in OpenAPI's
// path syntax ({id}, not :id).
func routerRoutes(t *testing.T) map[string]bool {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	handlers.Register(r, nil, nil, nil, nil, http.NotFoundHandler(), handlers.Classes{})
	handlers.RegisterOpenAPI(r)
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	out := map[string]bool{}
	for _, ri := range r.Routes() {
		out[ri.Method+" "+param.ReplaceAllString(ri.Path, "{$1}")] = true
	}
	return out
}

// TestOpenAPIMatchesRouter: every route of the router is in the document,
// and every operation of the document is a route, but for the ones marked
// pending (required routes not merged yet), and a pending
// mark on a route the router has is an error.
func TestOpenAPIMatchesRouter(t *testing.T) {
	ops := operations(t, openAPIDoc(t))
	routes := routerRoutes(t)
	for _, route := range slices.Sorted(maps.Keys(routes)) {
		op, ok := ops[route]
		switch {
		case !ok:
			t.Errorf("route %s is not in handlers/openapi.yaml", route)
		case op[pendingKey] != nil:
			t.Errorf("%s is in the router: remove its %s mark in handlers/openapi.yaml", route, pendingKey)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		if !routes[key] && ops[key][pendingKey] == nil {
			t.Errorf("handlers/openapi.yaml documents %s, which the router does not have", key)
		}
	}
}

// TestOpenAPIContract: the document is OpenAPI 3.1; every $ref resolves;
// every error answer is the JSON {"error": ...} body; 429 carries
// Retry-After and X-RateLimit-*, 503 Retry-After; a product read carries
// X-Cache, Cache-Status and ETag; every GET path also documents HEAD.
func TestOpenAPIContract(t *testing.T) {
	doc := openAPIDoc(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi: %q, want 3.1.x", v)
	}
	checkRefs(t, doc, doc, "#")

	ops := operations(t, doc)
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		op := ops[key]
		responses, _ := op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", key)
			continue
		}
		if method, path, _ := strings.Cut(key, " "); method == "GET" && ops["HEAD "+path] == nil {
			t.Errorf("%s: no HEAD operation (every GET route answers HEAD)", key)
		}
		if strings.HasPrefix(key, "HEAD ") || key == "GET /readyz" {
			continue // no body; a probe's 503 is its state, not an error
		}
		for code, raw := range responses {
			resp := resolve(t, doc, raw)
			if code >= "400" && schemaRef(resp, "application/json") != "#/components/schemas/Error" {
				t.Errorf("%s %s: body is not the Error schema", key, code)
			}
			want := map[string][]string{
				"429": {"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
				"503": {"Retry-After"},
			}[code]
			if key == "GET /products/{id}" && code == "200" {
				want = []string{"X-Cache", "Cache-Status", "ETag"}
			}
			headers, _ := resp["headers"].(map[string]any)
			for _, h := range want {
				if headers[h] == nil {
					t.Errorf("%s %s: header %s not documented", key, code, h)
				}
			}
		}
	}
}

// TestOpenAPIServed: GET /openapi.yaml answers the embedded document.
func TestOpenAPIServed(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	handlers.RegisterOpenAPI(r)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
	if w.Code != http.StatusOK || w.Body.String() != string(handlers.OpenAPI) || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/yaml") {
		t.Errorf("GET /openapi.yaml: %d %q, %d bytes; want 200 application/yaml and the document", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
	}
}

// resolve follows a {$ref: '#/...'} node to what it names.
func resolve(t *testing.T, doc map[string]any, node any) map[string]any {
	t.Helper()
	m, _ := node.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		return resolve(t, doc, lookup(doc, ref))
	}
	return m
}

// schemaRef is the $ref of the schema of resp's content of type ct.
func schemaRef(resp map[string]any, ct string) string {
	content, _ := resp["content"].(map[string]any)
	media, _ := content[ct].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	ref, _ := schema["$ref"].(string)
	return ref
}

// lookup returns the node a local $ref names, or nil.
func lookup(doc map[string]any, ref string) any {
	var node any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return node
}

// checkRefs fails for every $ref under node that names nothing.
func checkRefs(t *testing.T, doc map[string]any, node any, where string) {
	t.Helper()
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if ref, ok := v.(string); ok && k == "$ref" && lookup(doc, ref) == nil {
				t.Errorf("%s: $ref %s names nothing", where, ref)
			}
			checkRefs(t, doc, v, where+"/"+k)
		}
	case []any:
		for i, v := range n {
			checkRefs(t, doc, v, fmt.Sprintf("%s/%d", where, i))
		}
	}
}
