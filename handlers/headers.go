package handlers

import "github.com/gin-gonic/gin"

// headers collects a product answer's headers and sets them at once, every
// value in one allocation. gin's c.Header (http.Header.Set) re-spells each
// key and allocates a one-value slice per header, and a product read sets
// six on every answer, most of them from the L1 in a few hundred ns.
//
// Keys must be in net/http's canonical spelling ("Etag", not "ETag"): they
// go into the map as given, as Header.Clone's do. Headers_test checks the
// ones used here.
type headers struct {
	keys, vals [maxHeaders]string
	n          int
}

// maxHeaders is the most a product answer sets: X-Cache, Cache-Status,
// Cache-Control, Etag, Last-Modified, Age.
const maxHeaders = 6

func (hs *headers) add(key, value string) {
	hs.keys[hs.n], hs.vals[hs.n] = key, value
	hs.n++
}

// set writes the headers into the response, replacing earlier values (the
// no-store default).
func (hs *headers) set(c *gin.Context) {
	vals := make([]string, hs.n)
	copy(vals, hs.vals[:hs.n])
	h := c.Writer.Header()
	for i := range hs.n {
		h[hs.keys[i]] = vals[i : i+1 : i+1] // capped: an Add appends to a copy
	}
}
