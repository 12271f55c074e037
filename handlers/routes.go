package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Register mounts the whole API: every route on one screen. Middleware that
// depends on a route's priority is passed per group by the caller.
func Register(r *gin.Engine, p *Products, o *Orders, rep *Reports, h *Health, classes Classes) {
	r.HandleMethodNotAllowed = true
	r.NoRoute(func(c *gin.Context) { abort(c, http.StatusNotFound, "no such route") })
	r.NoMethod(func(c *gin.Context) { abort(c, http.StatusMethodNotAllowed, "method not allowed") })

	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)

	normal := r.Group("/", append(classes.All, classes.Normal...)...)
	normal.GET("/products/:id", p.get)
	normal.GET("/products", p.list)

	critical := r.Group("/", append(classes.All, classes.Critical...)...)
	critical.POST("/products", p.create)
	critical.PUT("/products/:id", p.update)
	critical.POST("/orders", o.create)

	low := r.Group("/", append(classes.All, classes.Low...)...)
	low.GET("/reports/top-products", rep.topProducts)
}

// Classes holds the middleware the API routes run behind: All for every API
// route (the per-IP rate limit; probes are exempt), then the one of each
// priority class (shedding thresholds, concurrency limits).
type Classes struct {
	All                   []gin.HandlerFunc
	Critical, Normal, Low []gin.HandlerFunc
}
