package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Register mounts the whole API: every route on one screen. Middleware that
// depends on a route's priority is passed per group by the caller.
func Register(r *gin.Engine, p *Products, o *Orders, rep *Reports, h *Health, metrics http.Handler, classes Classes) {
	// Every answer the router makes is JSON: an unknown method is a 405
	// with Allow (NoMethod below), and no path is "corrected" with a
	// redirect — gin's trailing-slash redirect answers 301/307 in HTML and
	// builds its Location from X-Forwarded-Prefix, a header any client
	// writes. "/products/" is a 404 like any path that is not a route.
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.Use(noStore())
	r.NoRoute(func(c *gin.Context) { abort(c, http.StatusNotFound, "no such route") })
	r.NoMethod(func(c *gin.Context) { abort(c, http.StatusMethodNotAllowed, "method not allowed") })

	getHead(r, "/healthz", h.healthz)
	getHead(r, "/readyz", h.readyz)
	if metrics != nil {
		getHead(r, "/metrics", gin.WrapH(metrics))
	} else { // served on a listener of its own (METRICS_ADDR): say where
		getHead(r, "/metrics", func(c *gin.Context) {
			abort(c, http.StatusNotFound, "metrics are served on their own listener (METRICS_ADDR), not on this one")
		})
	}

	normal := r.Group("/", classes.Normal...)
	getHead(normal, "/products/:id", p.get)
	getHead(normal, "/products", p.list)
	getHead(normal, "/orders/:id", o.get)

	// Product writes need a key with write scope, checked before the
	// class's admission control so a request without one holds nothing.
	authorize := classes.Authorize
	if authorize == nil {
		authorize = denyWrites // secure by default: no checker, no writes
	}
	writes := r.Group("/", append(classes.BeforeAuth[:len(classes.BeforeAuth):len(classes.BeforeAuth)], authorize)...)
	writes = writes.Group("/", classes.Critical...)
	writes.POST("/products", p.create)
	writes.PUT("/products/:id", p.update)

	critical := r.Group("/", classes.Critical...)
	critical.POST("/orders", append(classes.Checkout[:len(classes.Checkout):len(classes.Checkout)], o.create)...)

	low := r.Group("/", classes.Low...)
	getHead(low, "/reports/top-products", rep.topProducts)
}

// getHead mounts a GET route and its HEAD twin (RFC 9110 §9.3.2): the same
// handler, status and headers; net/http drops the body of a HEAD answer.
func getHead(r gin.IRoutes, path string, h ...gin.HandlerFunc) {
	r.GET(path, h...)
	r.HEAD(path, h...)
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
	// BeforeAuth runs before Authorize (the per-IP rate limit): a made-up
	// key costs its sender's budget before it costs a key lookup.
	BeforeAuth []gin.HandlerFunc
	// Checkout runs on POST /orders after the Critical chain (the order
	// budget per client).
	Checkout []gin.HandlerFunc
}

func denyWrites(c *gin.Context) {
	c.Header("WWW-Authenticate", `Bearer realm="stampede-guard"`)
	abort(c, http.StatusUnauthorized, "this route needs an API key: send the header Authorization: Bearer YOUR_KEY")
}
