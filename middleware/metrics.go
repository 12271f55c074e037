package middleware

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics observes every request's latency by route template (never the raw
// path: ids would make the label set unbounded), method and status.
func Metrics(h *prometheus.HistogramVec) gin.HandlerFunc {
	s := &series{vec: h}
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		s.observer(c.FullPath(), method(c.Request.Method), c.Writer.Status()).Observe(time.Since(start).Seconds())
	}
}

// series keeps each label set's Observer, as client_golang advises for hot
// paths: WithLabelValues hashes and compares the three values (and the
// status is formatted) on every request. The label sets are bounded:
// route templates × the methods method lets through × status codes.
//
// A sync.Map, written once per label set and then only read: an RWMutex's
// read lock is an atomic add on a shared counter, two per request, which
// both cores fight over.
type series struct {
	vec *prometheus.HistogramVec
	m   sync.Map // seriesKey → prometheus.Observer
}

type seriesKey struct {
	route, method string
	status        int
}

func (s *series) observer(route, method string, status int) prometheus.Observer {
	k := seriesKey{route, method, status}
	if o, ok := s.m.Load(k); ok {
		return o.(prometheus.Observer)
	}
	if route == "" {
		route = "unmatched"
	}
	o := s.vec.WithLabelValues(route, method, strconv.Itoa(status))
	s.m.Store(k, o) // a racing Store keeps the same series: WithLabelValues returns it
	return o
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
