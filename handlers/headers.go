package handlers

import "github.com/gin-gonic/gin"

// headers collects a product answer's headers and sets them at once, every
// value in one allocation. gin's c.Header (http.Header.Set) re-spells each
// key and allocates a one-value slice per header, and a product read sets
// up to seven on every answer, most of them from the L1 in a few hundred ns.
//
// Keys must be in net/http's canonical spelling ("Etag", not "ETag"): they
// go into the map as given, as Header.Clone's do. TestProductHeaders checks the
// ones used here.
type headers struct {
	keys, vals [maxHeaders]string
	n          int
	more       []string // key, value, … past maxHeaders: set one by one
}

// maxHeaders is the most a product answer sets today: X-Cache,
// Cache-Status, Cache-Control, Etag, Last-Modified, Age, Content-Type.
const maxHeaders = 7

func (hs *headers) add(key, value string) {
	if hs.n == maxHeaders {
		hs.more = append(hs.more, key, value)
		return
	}
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
	for i := 0; i < len(hs.more); i += 2 {
		h[hs.more[i]] = []string{hs.more[i+1]}
	}
}
