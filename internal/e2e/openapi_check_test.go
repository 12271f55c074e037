package e2e

// Every response the end-to-end tests receive through testClient is
// validated against handlers/openapi.yaml: status (an undocumented status is a
// mismatch), headers and body. A mismatch makes that request fail with an
// error (send returns it) and, in case a test tolerates errors, the whole
// package fails at the end with the list (TestMain).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/stampede-guard/api/handlers"
)

// openAPICheck is a test-only RoundTripper that validates responses.
type openAPICheck struct {
	base   http.RoundTripper
	router routers.Router
	err    error // loading the document failed: every request fails

	mu         sync.Mutex
	mismatches []string
	checked    map[string]int // "GET /products/{id} 200" → responses validated
}

// newOpenAPICheck loads the embedded document. Its servers are dropped so
// a route matches whatever address a test app listens on.
func newOpenAPICheck(base http.RoundTripper) *openAPICheck {
	c := &openAPICheck{base: base, checked: map[string]int{}}
	doc, err := openapi3.NewLoader().LoadFromData(handlers.OpenAPI)
	if err == nil {
		err = doc.Validate(context.Background())
	}
	if err == nil {
		doc.Servers = nil
		c.router, err = gorillamux.NewRouter(doc)
	}
	if err != nil {
		c.err = fmt.Errorf("openapi: handlers/openapi.yaml: %w", err)
	}
	return c
}

func (c *openAPICheck) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.err != nil {
		return nil, c.err
	}
	// The body is kept for the request's own check below.
	var sent []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		sent, req = b, req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	route, params, ferr := c.router.FindRoute(req)
	if ferr != nil {
		// Not an API route: the admin listener (console, state feed,
		// pprof), the metrics listener, a made-up path. The router test
		// (handlers/openapi_test.go) keeps router and document in step.
		var re *routers.RouteError
		if errors.As(ferr, &re) {
			return resp, nil
		}
		return resp, ferr
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true, // an undocumented status is a mismatch
			ExcludeResponseBody:   req.Method == http.MethodHead,
			MultiError:            true,
		},
	}
	name := fmt.Sprintf("%s %s %d", req.Method, route.Path, resp.StatusCode)
	verr := openapi3filter.ValidateResponse(req.Context(), in)
	if verr == nil && resp.StatusCode < 400 {
		// A request the service accepted must be one the contract allows,
		// or a client generated from it cannot make it.
		verr = c.acceptedRequest(req, sent, route, params)
	}
	if verr != nil {
		msg := fmt.Sprintf("%s (%s): %v; body %.300s", name, req.URL.Path, verr, body)
		c.mu.Lock()
		c.mismatches = append(c.mismatches, msg)
		c.mu.Unlock()
		return nil, fmt.Errorf("openapi: response does not match handlers/openapi.yaml: %s", msg)
	}
	c.mu.Lock()
	c.checked[name]++
	c.mu.Unlock()
	return resp, nil
}

// acceptedRequest validates a request the service answered with success
// against the contract: its parameters, headers and body.
func (c *openAPICheck) acceptedRequest(req *http.Request, body []byte, route *routers.Route, params map[string]string) error {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	err := openapi3filter.ValidateRequest(req.Context(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	})
	if err != nil {
		return fmt.Errorf("the request was accepted, but the contract refuses it: %w (request body %.200s)", err, body)
	}
	return nil
}

// report is the package's verdict: the mismatches seen, or "" when none.
func (c *openAPICheck) report() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err.Error()
	}
	if len(c.mismatches) == 0 {
		return ""
	}
	return "responses that do not match handlers/openapi.yaml:\n  " + strings.Join(c.mismatches, "\n  ")
}

// summary lists what was validated, for -v runs.
func (c *openAPICheck) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.checked))
	n := 0
	for k, v := range c.checked {
		names = append(names, k)
		n += v
	}
	sort.Strings(names)
	return fmt.Sprintf("openapi: %d responses validated (%d route/status pairs)", n, len(names))
}

// TestOpenAPIDocumentValid: kin-openapi loads and validates the document
// (OpenAPI 3.1) and routes it; every other test's responses depend on it.
func TestOpenAPIDocumentValid(t *testing.T) {
	if c := newOpenAPICheck(http.DefaultTransport); c.err != nil {
		t.Fatal(c.err)
	}
}
