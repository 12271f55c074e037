package handlers

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzCanonicalInt: an id is accepted exactly when it is how
// strconv.FormatInt writes its value.
func FuzzCanonicalInt(f *testing.F) {
	for _, s := range []string{"1", "0", "01", "+1", "-1", "9223372036854775807", "9223372036854775808", " 1", "1e3", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := canonicalInt(s)
		if ok && strconv.FormatInt(n, 10) != s {
			t.Errorf("canonicalInt(%q) = %d, accepted, but %d is written %q", s, n, n, strconv.FormatInt(n, 10))
		}
		if m, err := strconv.ParseInt(s, 10, 64); !ok && err == nil && m >= 0 && strconv.FormatInt(m, 10) == s {
			t.Errorf("canonicalInt(%q) refused a canonical integer", s)
		}
	})
}

// FuzzSplitETags: any If-Match / If-None-Match value splits without
// panicking into "*" or quoted entity tags.
func FuzzSplitETags(f *testing.F) {
	for _, s := range []string{`"a"`, `W/"a", "b"`, `*`, `"a,b", *`, `"unterminated`, `W/`, `,,,`, `"a" junk "b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tag := range splitETags(s) {
			quoted := strings.HasPrefix(strings.TrimPrefix(tag, "W/"), `"`) && strings.HasSuffix(tag, `"`) && len(strings.TrimPrefix(tag, "W/")) >= 2
			if tag != "*" && !quoted {
				t.Errorf("splitETags(%q) gave %q, not * or a quoted tag", s, tag)
			}
		}
	})
}

// FuzzProductBody: whatever the body of POST /products, the answer is a
// client error or a creation — never a 500 — and a store error can only be
// reached by a body that passed validation.
func FuzzProductBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","price_cents":1}`, `{"name":"a","price_cents":1,"price_cents":2}`, `{"Name":"a","price_cents":1}`,
		`{"name":"a","price_cents":1,"stock":-1}`, `[`, `{"name":"\u0000","price_cents":1}`, `{"name":"a","price_cents":1e99}`,
		`{"name":"a","price_cents":1} {}`, `{"name":{"x":1},"price_cents":1}`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/products", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := serve(t, fakeProducts{}, req)
		switch rec.Code {
		case http.StatusCreated, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Errorf("body %q: got %d %s, want 201, 400 or 413", body, rec.Code, rec.Body)
		}
	})
}
