package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRefusal measures one refused read end to end over loopback
// HTTP: a read of a product that is not cached while the database's
// breaker is open, answered 503 after its one Redis GET. That is the work
// each request of an overload burst that will be refused does (the lab's
// `refusal` experiment, one request at a time instead of 200 at once).
// Beside it, two floors: a bare gin handler answering the same 503 (the
// loopback round trip and the client, which share the process), and one
// that first makes the one Redis GET every read needs (the lab's second
// floor, tools/lab/bare.go:bareLookup). What the refused read costs above
// the second is the stack's: middleware, the batch, the claim, the log.
// Compare ns/op and allocs/op: docs/benchmarks.md gives the command.
func BenchmarkRefusal(b *testing.B) {
	gin.SetMode(gin.ReleaseMode) // as the service runs it
	bare := gin.New()
	bare.GET("/products/:id", func(c *gin.Context) {
		c.Header("Retry-After", "1")
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "temporarily unavailable, retry later"})
	})
	srv := httptest.NewServer(bare)
	b.Cleanup(srv.Close)

	env := testEnv(b, map[string]string{"API_KEYS": "", "RATE_LIMIT": "off", "ADMIN_ADDR": "off"})
	opt, err := redis.ParseURL(env["REDIS_URL"])
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { _ = rdb.Close() })
	lookup := gin.New()
	lookup.GET("/products/:id", func(c *gin.Context) {
		// A key never written, in the test's namespace: always a miss.
		if err := rdb.Get(c.Request.Context(), nsKey(env, "floor:"+c.Param("id"))).Err(); err != nil {
			c.Header("Retry-After", "1")
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "temporarily unavailable, retry later"})
			return
		}
		c.Status(http.StatusOK)
	})
	floor := httptest.NewServer(lookup)
	b.Cleanup(floor.Close)
	link := proxyDatabase(b, env)
	base := launchApp(b, env, quietLog()).waitListening()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var next atomic.Int64 // products 1..1000 in turn: never cached, all known
	get := func(base string) (int, error) {
		resp, err := hc.Get(fmt.Sprintf("%s/products/%d", base, 1+next.Add(1)%1000))
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	link.SetDown(true)
	if !breakerOpens(b, base, func() { _, _ = get(base) }) {
		b.Fatalf("the database breaker did not open after 50 reads on a cut link")
	}

	for _, tg := range []struct{ name, base string }{{"bare 503", srv.URL}, {"GET then 503", floor.URL}, {"refused read", base}} {
		b.Run(tg.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					status, err := get(tg.base)
					if err != nil || status != http.StatusServiceUnavailable {
						b.Errorf("got %d (%v), want 503", status, err)
						return
					}
				}
			})
		})
	}
}

// breakerOpens makes up to 50 reads until base's metrics show the main
// database breaker open.
func breakerOpens(b *testing.B, base string, read func()) bool {
	for range 50 {
		read()
		if scrape(b, base)[`stampede_breaker_state{breaker="postgres_main"}`] == 2 {
			return true
		}
	}
	return false
}
