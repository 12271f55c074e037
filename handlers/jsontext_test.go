package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBrokenTextRefused: a lone UTF-16 surrogate escape or invalid UTF-8
// in a body is refused with 400; encoding/json alone would store U+FFFD
// in its place. Complete pairs, escaped backslashes and plain escapes
// pass.
func TestBrokenTextRefused(t *testing.T) {
	for _, tc := range []struct {
		name, name2 string // the JSON text of the product's name
		want        int
	}{
		{"lone high surrogate", `"\ud800"`, http.StatusBadRequest},
		{"lone high surrogate, upper case", `"a\uD800b"`, http.StatusBadRequest},
		{"lone low surrogate", `"\udc00"`, http.StatusBadRequest},
		{"high then not a low", `"\ud800\u0041"`, http.StatusBadRequest},
		{"high then high", `"\ud800\ud800"`, http.StatusBadRequest},
		{"low then high", `"\udc00\ud800"`, http.StatusBadRequest},
		{"invalid UTF-8 byte", "\"a\xffb\"", http.StatusBadRequest},
		{"truncated UTF-8", "\"a\xc3\"", http.StatusBadRequest},
		{"surrogate pair", `"\ud83d\ude00"`, http.StatusCreated},
		{"escaped backslash before u", `"\\ud800"`, http.StatusCreated},
		{"plain escape", `"caf\u00e9 \"x\" \\"`, http.StatusCreated},
		{"raw UTF-8", `"café 😀"`, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"name":` + tc.name2 + `,"price_cents":1}`
			req := httptest.NewRequest("POST", "/products", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := serveWant(t, req, tc.want)
			if tc.want == http.StatusBadRequest && !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("400 without a JSON error: %s", rec.Body)
			}
		})
	}
}
