package telemetry_test

import (
	"errors"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestOpenTelemetryErrorsAreLoggedAsJSONOnceASecond: a hundred failed
// exports in a burst give one JSON line in the app's log, not a hundred
// plain-text lines on stderr (the SDK's default handler).
func TestOpenTelemetryErrorsAreLoggedAsJSONOnceASecond(t *testing.T) {
	var logs dbtest.LogBuffer
	telemetry.SetErrorLog(slog.New(slog.NewJSONHandler(&logs, nil)))
	for range 100 {
		otel.Handle(errors.New(`traces export: Post "http://127.0.0.1:1/v1/traces": connection refused`))
	}
	// A burst may straddle a second: one line for each.
	if n := logs.Count(`"msg":"tracing: OpenTelemetry error, spans may be lost"`); n < 1 || n > 2 {
		t.Errorf("%d JSON lines for 100 export errors, want 1 (2 if the burst straddled a second)", n)
	}
	if logs.Count("connection refused") == 0 {
		t.Error("the line does not carry the exporter's error")
	}
}
