package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stampede-guard/api/middleware"
)

// ServeMetrics places GET /metrics. With addr empty it returns h for the
// public router (the documented place: /metrics on HTTP_ADDR). Otherwise it serves h on a
// listener of its own at addr, so scrapes stay off the public port, and
// returns a nil handler: the public router then has no /metrics. stop shuts
// that listener down.
func ServeMetrics(addr string, h http.Handler, log *slog.Logger) (public http.Handler, stop func(), err error) {
	if addr == "" {
		return h, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listen %s (METRICS_ADDR): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: middleware.NosniffHandler(mux), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return nil, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
