package middleware

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Headers every answer carries whatever route, status or body it has.
//
// X-Content-Type-Options: nosniff stops a browser from reading an answer
// as another type than the one it names: a JSON error that echoes part of
// a request, or a plain-text body, is never run as HTML or script. The
// value is one shared slice set by map index, as noStore sets
// Cache-Control (handlers/httpcache.go): no allocation per request. Its
// capacity is its length, so a later Add appends to a copy.

const nosniffHeader = "X-Content-Type-Options"

// Nosniff sets X-Content-Type-Options: nosniff on every answer of the
// engine, its 404 and 405 answers included (gin runs the engine's
// middleware before them).
func Nosniff() gin.HandlerFunc {
	v := []string{"nosniff"}
	return func(c *gin.Context) {
		c.Writer.Header()[nosniffHeader] = v[:1:1]
		c.Next()
	}
}

// NosniffHandler is Nosniff for a plain net/http handler: the admin
// listener (console, feed, pprof) and the metrics listener.
func NosniffHandler(next http.Handler) http.Handler {
	v := []string{"nosniff"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()[nosniffHeader] = v[:1:1]
		next.ServeHTTP(w, r)
	})
}
