package middleware

import (
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// requestIDHeader is X-Request-ID as net/http spells it: read and written
// by map index, it costs no re-spelling (an allocation) per request.
const requestIDHeader = "X-Request-Id"

// RequestID returns the id RequestLog gave the request: the one echoed in
// the response (kept there rather than in gin's Keys, a map per request).
func RequestID(c *gin.Context) string { return headerValue(c.Writer.Header(), requestIDHeader) }

// headerValue is h.Get(key) for a key in canonical spelling, without Get's
// check of the spelling on every request.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// OwnRequestID gives an answer that shared caches may store (Cache-Control:
// public) an id of the server's own in place of one the client chose: a
// CDN would hand that answer, and the client's chosen id, to everyone
// else. The access log names the id the answer carried.
func OwnRequestID(c *gin.Context) {
	h := c.Writer.Header()
	if v := h[requestIDHeader]; len(v) > 0 && v[0] == headerValue(c.Request.Header, requestIDHeader) {
		h[requestIDHeader] = []string{newRequestID()}
	}
}

// SetRequestID gives an answer its X-Request-ID (a sane one the client
// sent, or a new random one) and returns it. RequestLog calls it for the
// API; the handler that answers while the instance starts, before gin's
// engine exists, calls it too, so every answer carries an id.
func SetRequestID(h http.Header, r *http.Request) string {
	var id string
	if v := r.Header[requestIDHeader]; len(v) > 0 {
		id = v[0]
	}
	if !validRequestID(id) {
		id = newRequestID()
	}
	h[requestIDHeader] = []string{id}
	return id
}

// maxRequestIDLen bounds an id a client sends us, so logs stay sane.
const maxRequestIDLen = 64

// RequestLog gives each request an id (a sane X-Request-ID from the client,
// or a new random one), echoes it in the response, and writes one access log
// line when the request ends.
func RequestLog(log *AccessLog) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		id := SetRequestID(c.Writer.Header(), c.Request)
		c.Next()

		level := slog.LevelInfo
		if c.Writer.Status() >= 500 {
			level = slog.LevelWarn
		}
		if !log.Enabled(level) {
			return // LOG_LEVEL=warn: a hot path pays nothing for the access log
		}
		end := time.Now() // one clock read for the duration and the line's time
		if id != headerValue(c.Writer.Header(), requestIDHeader) {
			id = RequestID(c) // replaced by OwnRequestID
		}
		log.write(c.Request.Context(), level, accessLine{
			at:         end,
			requestID:  id,
			method:     c.Request.Method,
			route:      c.FullPath(),
			status:     c.Writer.Status(),
			durationMs: float64(end.Sub(start).Microseconds()) / 1000,
			cache:      headerValue(c.Writer.Header(), "X-Cache"),
			clientIP:   clientIP(c),
		})
	}
}

// newRequestID is 16 random hex digits. An id names a request in logs and
// traces, it guards nothing, so the runtime's fast generator serves (a
// third of crypto/rand's cost on every request without a client's id).
func newRequestID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64()) // #nosec G404 -- an id to find a request by, not a secret
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
