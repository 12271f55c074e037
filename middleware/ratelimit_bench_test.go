package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/middleware"
)

// BenchmarkRateLimitHotKey is the limiter's own cost per counted request
// of one hot client, on every core at once: RateLimit over a LeaseStore
// on Redis with a limit never reached (the lease is 1 % of it, so Redis is
// asked once per million requests), against the same route without it.
// Each goroutine has its own gin.Context, as gin's pool would lend it.
func BenchmarkRateLimitHotKey(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	shared, err := redisstore.NewStoreWithOptions(dbtest.NewRedis(b, redisDB), limiter.StoreOptions{Prefix: "rl-bench-" + dbtest.Unique()})
	if err != nil {
		b.Fatalf("redis store: %v", err)
	}
	store := middleware.NewLeaseStore(shared, 0.01, 100)
	rate := limiter.Rate{Period: 3_600_000_000_000, Limit: 100_000_000}
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "limiter off", true: "limiter on"}[on]
		var handler gin.HandlerFunc
		if on {
			handler = middleware.RateLimit(limiter.New(store, rate), dbtest.Logger(b), nil)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := discardWriter{h: http.Header{}}
				c, e := gin.CreateTestContext(w)
				if handler != nil {
					e.Use(handler)
				}
				e.GET("/products/:id", func(c *gin.Context) { c.Status(http.StatusOK) })
				c.Request = httptest.NewRequest(http.MethodGet, "/products/1", nil)
				c.Request.RemoteAddr = peer
				for pb.Next() {
					e.HandleContext(c)
				}
			})
		})
	}
}
