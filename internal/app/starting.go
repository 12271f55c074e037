package app

import (
	"net/http"
	"sync/atomic"
)

// swapHandler is the server's handler, replaced once: handlers.Starting
// while the dependencies open, then the API. The server serves from the
// moment the port is bound, so no accepted connection waits for the start.
type swapHandler struct {
	h atomic.Pointer[http.Handler]
}

func newSwapHandler(first http.Handler) *swapHandler {
	s := &swapHandler{}
	s.set(first)
	return s
}

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}
