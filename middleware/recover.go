// Package middleware guards the door: it decides, before a handler runs,
// whether a request gets in and how long it may take, so overload and
// misbehaving clients are refused cheaply instead of queueing in front of the
// database. Each file is one concern; each constructor returns a
// gin.HandlerFunc and takes its dependencies.
package middleware

import (
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"
)

// Recover turns a panic into a logged stack trace and a JSON 500, so one bad
// request cannot take the process down and the client learns nothing of the
// internals. http.ErrAbortHandler is re-panicked: net/http uses it to drop a
// connection on purpose.
func Recover(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			log.Error("panic recovered",
				"panic", rec, "method", c.Request.Method, "path", c.Request.URL.Path,
				"request_id", RequestID(c), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				Refuse(c, http.StatusInternalServerError, "internal error", 0)
				return
			}
			c.Abort()
		}()
		c.Next()
	}
}
