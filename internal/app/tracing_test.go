package app

import (
	"testing"
)

func TestTracingOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, false},
	} {
		cfg, err := loadConfig(envOf(tc.env))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if got := cfg.Tracing.On(); got != tc.want {
			t.Errorf("%v: tracing on = %v, want %v", tc.env, got, tc.want)
		}
	}
	if _, err := loadConfig(envOf(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"})); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted; only otlp and none are supported")
	}
}
