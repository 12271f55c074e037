package handlers

import (
	"net/http"

	"github.com/stampede-guard/api/middleware"
)

// Starting answers while the instance opens its dependencies (database
// pools, migrations, the signing key, Redis), before the API exists: the
// listener is bound first, so without it a client's connection was accepted
// and then left unanswered for as long as the start took (a products table
// locked by another instance's migration held it for as long as the lock).
// Liveness is true (the process runs: a slow start must not get it
// restarted), readiness is false, and every other request is refused at
// once with 503 and Retry-After, as a draining or overloaded instance
// refuses. The probes are the API's own routes, GET and HEAD only, so a
// probe that is wrong after the start (a method, a trailing slash) is not
// told "alive" before it; and every answer carries its X-Request-ID, as
// the API's do. It is plain net/http: gin's engine is built with the API,
// after the dependencies it serves.
func Starting() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		middleware.SetRequestID(h, r)
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		status, body := http.StatusServiceUnavailable, `{"error":"starting, retry shortly"}`
		probe := r.Method == http.MethodGet || r.Method == http.MethodHead
		switch {
		case probe && r.URL.Path == "/healthz":
			status, body = http.StatusOK, `{"status":"ok"}`
		case probe && r.URL.Path == "/readyz":
			body = `{"status":"starting"}`
		default:
			h.Set("Retry-After", "1")
		}
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(body))
		}
	})
}
