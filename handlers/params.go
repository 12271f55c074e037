package handlers

// Path, query and header parameters: each read one way, in canonical form
// and given once, so one resource has one URL and a proxy in front cannot
// read a request differently from the app.

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/stampede-guard/api/middleware"
)

// pathID parses the :id path parameter: a positive integer in canonical
// form, so one resource has one URL ("+1", "01" and "%2B0001" are not 1).
func pathID(c *gin.Context) (int64, error) {
	id, ok := canonicalInt(c.Param("id"))
	// A percent-encoded digit ("/products/%31") decodes to a canonical id
	// but is another URL: another CDN entry for the same product. Go keeps
	// RawPath only when the path was not written the default way.
	if !ok || id <= 0 || c.Request.URL.RawPath != "" {
		return 0, badRequest("id must be an integer from 1 to 9223372036854775807 in canonical form (no sign, no leading zeros)")
	}
	return id, nil
}

// canonicalInt parses a non-negative decimal integer written the one way
// strconv.FormatInt writes it: digits only, no sign, no leading zero.
func canonicalInt(s string) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// queryInt parses an optional integer query parameter within [lo, hi]
// (lo ≥ 0), in canonical form, given once: `?limit=5&limit=100` is as
// ambiguous as a JSON body with a key twice (a proxy or cache in front may
// read the other one), so it is refused rather than half-read.
func queryInt(c *gin.Context, name string, def, lo, hi int64) (int64, error) {
	v, ok, err := queryOnce(c, name)
	if err != nil || !ok {
		return def, err
	}
	n, ok := canonicalInt(v)
	if !ok || n < lo || n > hi {
		return 0, badRequest(fmt.Sprintf("%s must be an integer from %d to %d", name, lo, hi))
	}
	return n, nil
}

// headerOnce is middleware.OneHeader with its error a 400.
func headerOnce(c *gin.Context, name string) (v string, present bool, err error) {
	v, present, err = middleware.OneHeader(c.Request.Header, name)
	if err != nil {
		return "", false, badRequest(err.Error())
	}
	return v, present, nil
}

// queryOnce returns an optional query parameter, refused when given more
// than once (see queryInt), or when the query string is malformed: gin
// drops a pair it cannot parse ("limit=%ZZ", "after=1;limit=2"), and the
// request would be answered with defaults it did not ask for.
func queryOnce(c *gin.Context, name string) (v string, ok bool, err error) {
	q, perr := url.ParseQuery(c.Request.URL.RawQuery)
	if perr != nil {
		return "", false, badRequest("the query string is malformed: " + perr.Error() + "; percent-encode it and separate parameters with '&'")
	}
	vs, ok := q[name]
	switch {
	case !ok:
		return "", false, nil
	case len(vs) > 1:
		return "", false, badRequest(fmt.Sprintf("%s given %d times; give it once", name, len(vs)))
	}
	return vs[0], true, nil
}
