package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchWriter is a ResponseWriter that keeps one header map and no bytes,
// so only the handler's own work is measured.
type benchWriter struct{ h http.Header }

func (w benchWriter) Header() http.Header         { return w.h }
func (w benchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w benchWriter) WriteHeader(int)             {}

// BenchmarkProductRead is one hot product read through the routes, from a
// store that answers at once: the handler's share of a read (headers,
// validators, conditional checks, the body from its memo).
//
//	go test -run '^$' -bench ProductRead -count 10 ./handlers
func BenchmarkProductRead(b *testing.B) {
	r := cachingRouter(&recordingProducts{})
	req := httptest.NewRequest(http.MethodGet, "/products/7", nil)
	w := benchWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		r.ServeHTTP(w, req)
	}
}
