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
	if metrics != nil { // nil: served on a listener of its own (METRICS_ADDR)
		r.GET("/metrics", gin.WrapH(metrics))
	}

	normal := r.Group("/", classes.Normal...)
	normal.GET("/products/:id", p.get)
	normal.GET("/products", p.list)

	critical := r.Group("/", classes.Critical...)
	critical.POST("/products", p.create)
	critical.PUT("/products/:id", p.update)
	critical.POST("/orders", o.create)

	low := r.Group("/", classes.Low...)
	low.GET("/reports/top-products", rep.topProducts)
}

// Classes holds the middleware each priority class of API routes runs
// behind (rate limit, shedding threshold, concurrency limit). Probes and
// /metrics run behind none of it.
type Classes struct {
	Critical, Normal, Low []gin.HandlerFunc
}
