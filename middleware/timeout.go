package middleware

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// Timeout gives every request a deadline. Everything below passes
// c.Request.Context() on, so the database acquire, the lock wait and the
// query all stop when it fires, and the handler answers 503/504 instead of
// holding a connection for a client that has stopped waiting.
func Timeout(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}
