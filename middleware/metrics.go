package middleware

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics observes every request's latency by route template (never the raw
// path: ids would make the label set unbounded), method and status.
func Metrics(h *prometheus.HistogramVec) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		h.WithLabelValues(route, method(c.Request.Method), strconv.Itoa(c.Writer.Status())).Observe(time.Since(start).Seconds())
	}
}

// method bounds the label: any token is a valid HTTP method, so a client
// could otherwise mint a new time series per request.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}
