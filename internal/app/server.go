package app

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/propagation"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/admin"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/middleware"
)

// httpServer is the HTTP side built from deps: the handler to serve, and the
// readiness and request tally the lifecycle and the console drive.
type httpServer struct {
	handler http.Handler
	health  *handlers.Health
	reads   *admin.RequestTally // nil with ADMIN_ADDR=off
}

// newServer builds the gin engine (middleware in explicit order, the route
// classes of wire.go) and registers the whole API on it. publicMetrics is
// the /metrics handler on the API port, or nil when METRICS_ADDR serves it.
func newServer(d *deps, m *telemetry.Metrics, publicMetrics http.Handler, trace gin.HandlerFunc, access *middleware.AccessLog) (*httpServer, error) {
	cfg, log := d.cfg, d.log
	health := handlers.NewHealth(readyChecks, log,
		handlers.Check{Name: "postgres", Ping: unlessOpen(d.mainPool.Breaker, d.mainPool.Ping)},
		handlers.Check{Name: "redis", Ping: unlessOpen(d.redisBreaker.Snapshot, func(ctx context.Context) error { return d.rdb.Ping(ctx).Err() })},
		handlers.Check{Name: "postgres_breaker", Ping: breakerCheck(d.mainPool.Breaker)},
		handlers.Check{Name: "redis_breaker", Ping: breakerCheck(d.redisBreaker.Snapshot)},
	)
	breakers := d.breakers()
	health.ShowBreakers(func() any {
		out := make(map[string]breaker.Snapshot, len(breakers))
		for name, snapshot := range breakers {
			out[name] = snapshot()
		}
		return out
	})
	engine, err := newEngine(cfg, m, trace, log, access)
	if err != nil {
		return nil, err
	}
	s := &httpServer{handler: engine, health: health}
	if cfg.AdminAddr != "off" {
		// Counted only where a console can show them: with ADMIN_ADDR=off
		// the tally was a lock and a map update per request for no reader.
		s.reads = admin.NewRequestTally()
		engine.Use(countRequests(s.reads))
	}
	handlers.Register(engine,
		handlers.NewProducts(d.products, cfg.HTTPCache, log), handlers.NewOrders(d.orders, cfg.Abuse.OrderMaxQuantity, log),
		handlers.NewReports(d.reports, log), health, publicMetrics,
		routeClasses(cfg, d.rdb, d.mainPool, d.reportsPool, m, log))
	handlers.RegisterOpenAPI(engine)
	return s, nil
}

// readyChecks bounds each dependency check of /readyz. A check only fills
// the body (readiness never depends on it), so it must end well within the
// shortest probe timeout a load balancer gives /readyz (1 s in
// deploy/k8s): at a whole second, a stalled Redis or PostgreSQL made every
// probe time out, and two in a row took the instance, and with a shared
// stall the fleet, out of rotation.
const readyChecks = 300 * time.Millisecond

// traceRequests is the server span of each request (the route as its
// name), continuing a caller's W3C trace context; nil when tracing is off.
func traceRequests(tr *telemetry.Tracing, service string) gin.HandlerFunc {
	tp := tr.Provider()
	if tp == nil {
		return nil
	}
	return otelgin.Middleware(service, otelgin.WithTracerProvider(tp),
		otelgin.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
}

// pools lists the two pools, for metrics and the console.
func (d *deps) pools() []*db.Pool { return []*db.Pool{d.mainPool, d.reportsPool} }
