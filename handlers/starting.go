package handlers

import (
	"net/http"
	"strings"
)

// Starting answers while the instance opens its dependencies (database
// pools, migrations, the signing key, Redis), before the API exists: the
// listener is bound first, so without it a client's connection was accepted
// and then left unanswered for as long as the start took (a products table
// locked by another instance's migration held it for as long as the lock).
// Liveness is true (the process runs: a slow start must not get it
// restarted), readiness is false, and every other request is refused at
// once with 503 and Retry-After, as a draining or overloaded instance
// refuses. It is plain net/http: gin's engine is built with the API, after
// the dependencies it serves.
func Starting() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		status, body := http.StatusServiceUnavailable, `{"error":"starting, retry shortly"}`
		switch strings.TrimSuffix(r.URL.Path, "/") {
		case "/healthz":
			status, body = http.StatusOK, `{"status":"ok"}`
		case "/readyz":
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
