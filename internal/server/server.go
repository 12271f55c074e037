// Package server builds the service's public HTTP server: the timeouts that
// keep slow or idle clients from holding its connections and goroutines
// (a slowloris trickling headers or a body, a reader that never drains the
// answer, keep-alive connections left open). The lab's bare handler runs on
// the same server, so that its throughput comparison measures the
// middleware stack and not these protections.
package server

import (
	"log"
	"net/http"
	"time"
)

// Limits a request's reading and its connection's idling are held to.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	IdleTimeout       = 60 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// New is the server for h. write bounds writing one answer; it must lie
// outside the request's own deadline, so that a late answer is still sent
// rather than cut off mid-body. errorLog receives net/http's own errors
// (nil: the standard logger).
func New(h http.Handler, write time.Duration, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
}
