package handlers_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/handlers"
)

// TestStatusRouterAnswersJSON: what the router answers by itself — an
// unknown path, a method a route does not take, a path with a trailing
// slash — is a JSON error, never a redirect (gin's trailing-slash redirect
// answered 301/307 in HTML, its Location built from X-Forwarded-Prefix).
func TestStatusRouterAnswersJSON(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	handlers.Register(r, nil, nil, nil, nil, http.NotFoundHandler(), handlers.Classes{})
	for _, tc := range []struct {
		method, path string
		want         int
		allow        string
	}{
		{"GET", "/nope", 404, ""},
		{"GET", "/products/", 404, ""},
		{"GET", "/products/1/", 404, ""},
		{"POST", "/orders/", 404, ""},
		{"GET", "/PRODUCTS/1", 404, ""},
		{"GET", "/products//1", 404, ""},
		{"DELETE", "/products/1", 405, "GET, HEAD, PUT"},
		{"PATCH", "/orders", 405, "POST"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header.Set("X-Forwarded-Prefix", "//evil.example")
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("%d (Location %q), want %d", w.Code, w.Header().Get("Location"), tc.want)
			}
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] == nil {
				t.Errorf("body %q is not a JSON error", w.Body)
			}
			if tc.allow != "" && !sameMethods(w.Header().Get("Allow"), tc.allow) {
				t.Errorf("Allow %q, want %q", w.Header().Get("Allow"), tc.allow)
			}
		})
	}
}

func sameMethods(a, b string) bool {
	split := func(s string) []string {
		f := strings.Split(s, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		slices.Sort(f)
		return f
	}
	return slices.Equal(split(a), split(b))
}

// TestOpenAPIDescribesEveryStatus: the statuses no single operation owns
// are in the document too — 404 for a path that is no route, 405 with
// Allow, 408 on every operation that takes a body (with 413 and 415) —
// no operation promises a redirect, and the description names the plain
// text answers of Go's HTTP server (431, and 400 for an unparsable
// request) and nosniff.
func TestOpenAPIDescribesEveryStatus(t *testing.T) {
	doc := openAPIDoc(t)
	components, _ := doc["components"].(map[string]any)
	responses, _ := components["responses"].(map[string]any)
	for _, name := range []string{"NoRoute", "MethodNotAllowed", "RequestTimeout"} {
		if responses[name] == nil {
			t.Errorf("components.responses.%s missing", name)
		}
	}
	if mna, _ := responses["MethodNotAllowed"].(map[string]any); mna != nil {
		if h, _ := mna["headers"].(map[string]any); h["Allow"] == nil {
			t.Error("MethodNotAllowed does not document Allow")
		}
	}
	ops := operations(t, doc)
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		codes, _ := ops[key]["responses"].(map[string]any)
		if strings.HasPrefix(key, "POST ") || strings.HasPrefix(key, "PUT ") {
			for _, code := range []string{"408", "413", "415"} {
				if codes[code] == nil {
					t.Errorf("%s takes a body but does not document %s", key, code)
				}
			}
		}
		for code := range codes {
			if strings.HasPrefix(code, "3") && code != "304" {
				t.Errorf("%s documents %s: the router redirects nothing", key, code)
			}
		}
	}
	info, _ := doc["info"].(map[string]any)
	desc, _ := info["description"].(string)
	for _, want := range []string{"nosniff", "404", "405", "408", "431", "plain text"} {
		if !strings.Contains(desc, want) {
			t.Errorf("info.description does not mention %q", want)
		}
	}
}
