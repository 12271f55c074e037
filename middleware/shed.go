package middleware

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// Queue is a connection pool's wait queue as the shedder sees it.
type Queue interface {
	Waiting() int64
	DrainEstimate() time.Duration
}

// Shed admits requests of one priority class against the queue of the pool
// they use. maxWaiting is the longest queue the class may join: small for
// low-value work (reports), larger for checkout, so the low class is shed
// first. Every request carries its limit in the context (through mark), so
// the pool refuses it at the moment it would queue — a product read served
// from the cache never is. With atDoor, the limit is also checked before the
// handler runs: for classes whose every request needs the database, that
// refusal costs nothing at all.
func Shed(q Queue, maxWaiting int64, atDoor bool, mark func(context.Context, int64) context.Context, onShed func(*gin.Context)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if atDoor && q.Waiting() >= maxWaiting {
			if onShed != nil {
				onShed(c)
			}
			c.Header("Retry-After", seconds(q.DrainEstimate()))
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "overloaded, retry later"})
			return
		}
		c.Request = c.Request.WithContext(mark(c.Request.Context(), maxWaiting))
		c.Next()
	}
}

// Limit caps the requests of one route class in flight at once (a
// bulkhead): the next one is refused at once with 503 instead of queueing.
func Limit(n int, onRefused func(*gin.Context)) gin.HandlerFunc {
	slots := make(chan struct{}, n)
	return func(c *gin.Context) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			c.Next()
		default:
			if onRefused != nil {
				onRefused(c)
			}
			c.Header("Retry-After", "1")
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "too many concurrent requests, retry later"})
		}
	}
}

// seconds renders a Retry-After: whole seconds, rounded up, at least 1.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
