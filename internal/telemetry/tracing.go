package telemetry

import (
	"context"
	"fmt"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-guard/api/internal/config"
)

// Tracing is the app's tracer provider and its instrumentation hooks. Off,
// every hook is a no-op and tp is nil (the cache then traces nothing).
type Tracing struct {
	tp       *sdktrace.TracerProvider
	endpoint string // where spans go (Endpoint)
}

// NewTracing starts the OTLP/HTTP exporter behind a batch processor when
// tracing is on. shutdown flushes the spans not yet sent.
func NewTracing(ctx context.Context, cfg config.Tracing) (*Tracing, error) {
	if !cfg.On() {
		return &Tracing{}, nil
	}
	var opts []otlptracehttp.Option
	endpoint := "http://localhost:4318/v1/traces (the OTLP default)"
	switch {
	case cfg.TracesEndpoint != "":
		endpoint = cfg.TracesEndpoint
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	case cfg.Endpoint != "":
		endpoint = strings.TrimRight(cfg.Endpoint, "/") + "/v1/traces"
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later options win: OTEL_RESOURCE_ATTRIBUTES, then the service name.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attribute.String("service.name", cfg.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &Tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), endpoint: endpoint}, nil
}

// Provider is what the cache and the request spans get: nil when tracing
// is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t.tp == nil {
		return nil
	}
	return t.tp
}

// Shutdown sends the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// QueryTracer gives every pgx query a span.
func (t *Tracing) QueryTracer() pgx.QueryTracer {
	if t.tp == nil {
		return nil
	}
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(t.tp))
}

// InstrumentRedis gives every Redis command a span. Statements stay out:
// the scripts' arguments carry whole cached values.
func (t *Tracing) InstrumentRedis(rdb redis.UniversalClient) error {
	if t.tp == nil {
		return nil
	}
	if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.tp), redisotel.WithDBStatement(false)); err != nil {
		return fmt.Errorf("tracing: redis: %w", err)
	}
	return nil
}
