package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestWrongTypeNamedInJSONWords: a field of the wrong type is named with
// what JSON calls it, never a Go type the client cannot know.
func TestWrongTypeNamedInJSONWords(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"name":"a","price_cents":"1"}`, `field "price_cents" must be an integer`},
		{`{"name":1,"price_cents":1}`, `field "name" must be a string`},
		{`{"name":"a","price_cents":1,"stock":true}`, `field "stock" must be an integer`},
		{`{"name":"a","price_cents":1.5}`, `field "price_cents" must be an integer`},
		{`{"name":"a","price_cents":1e3}`, `field "price_cents" must be an integer`},
		// A whole number too large for the field is not "not an integer".
		// It says which end of the range it passed.
		{`{"name":"a","price_cents":99999999999999999999}`, `field "price_cents" is out of range: at most 9223372036854775807`},
		{`{"name":"a","price_cents":-99999999999999999999}`, `field "price_cents" is out of range: at least -9223372036854775808`},
		{`{"name":"a","price_cents":1,"stock":2147483648}`, `field "stock" is out of range: at most 2147483647`},
		{`{"name":"a","price_cents":1,"stock":-2147483649}`, `field "stock" is out of range: at least -2147483648`},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest(http.MethodPost, "/products", strings.NewReader(tc.body))
		c.Request.Header.Set("Content-Type", "application/json")
		var b productBody
		err := decodeJSON(c, &b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.want)
		}
	}
}
