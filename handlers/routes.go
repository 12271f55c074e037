package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Register mounts the whole API: every route on one screen. Middleware that
// depends on a route's priority is passed per group by the caller.
func Register(r *gin.Engine, p *Products, o *Orders, rep *Reports, h *Health, metrics http.Handler, classes Classes) {
	r.HandleMethodNotAllowed = true
	r.Use(noStore)
	r.NoRoute(func(c *gin.Context) { abort(c, http.StatusNotFound, "no such route") })
	r.NoMethod(func(c *gin.Context) { abort(c, http.StatusMethodNotAllowed, "method not allowed") })

	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	r.GET("/metrics", gin.WrapH(metrics))

	normal := r.Group("/", classes.Normal...)
	normal.GET("/products/:id", p.get)
	normal.GET("/products", p.list)
	normal.GET("/orders/:id", o.get)

	// Product writes need a key with write scope, checked before the
	// class's admission control so a request without one holds nothing.
	authorize := classes.Authorize
	if authorize == nil {
		authorize = denyWrites // secure by default: no checker, no writes
	}
	writes := r.Group("/", authorize)
	writes = writes.Group("/", classes.Critical...)
	writes.POST("/products", p.create)
	writes.PUT("/products/:id", p.update)

	critical := r.Group("/", classes.Critical...)
	critical.POST("/orders", o.create)

	low := r.Group("/", classes.Low...)
	low.GET("/reports/top-products", rep.topProducts)
}

// Classes holds the middleware each priority class of API routes runs
// behind (rate limit, shedding threshold, concurrency limit). Probes and
// /metrics run behind none of it.
type Classes struct {
	Critical, Normal, Low []gin.HandlerFunc
	// Authorize guards product writes (POST /products, PUT /products/:id):
	// it aborts with 401 unless the request carries a valid API key. Nil
	// refuses every write.
	Authorize gin.HandlerFunc
}

func denyWrites(c *gin.Context) {
	c.Header("WWW-Authenticate", `Bearer realm="stampede-guard"`)
	abort(c, http.StatusUnauthorized, "this route needs an API key: Authorization: Bearer <key>")
}
