package telemetry

import (
	"log/slog"

	"go.opentelemetry.io/otel"

	"github.com/stampede-guard/api/internal/loglimit"
)

// SetErrorLog sends OpenTelemetry's own errors (a batch of spans the
// collector did not take) to log, as JSON and at most a line a second:
// the SDK's default handler wrote a plain-text line to stderr per failed
// export, about 50 a second under load while the collector was down, in
// the middle of the JSON log. The handler is one per process, as go-redis's
// logger is (redisconn.SetLogger).
func SetErrorLog(log *slog.Logger) {
	var limit loglimit.PerSecond
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		limit.Log(log, slog.LevelWarn, "tracing: OpenTelemetry error, spans may be lost", "err", err)
	}))
}

// Endpoint is where spans go, for the start's log line: the traces URL as
// set, or the base URL's /v1/traces, or the exporter's default.
func (t *Tracing) Endpoint() string { return t.endpoint }
