package config

import "net/url"

// Tracing is the standard OpenTelemetry environment this app reads
// through getenv; the SDK and the exporter read the rest of it (headers,
// sampler, batch sizes, OTEL_RESOURCE_ATTRIBUTES) from the process itself.
type Tracing struct {
	Exporter       string // OTEL_TRACES_EXPORTER: "" (otlp when an endpoint is set), otlp or none
	Endpoint       string // OTEL_EXPORTER_OTLP_ENDPOINT: base URL; /v1/traces is appended
	TracesEndpoint string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: full URL, wins over Endpoint
	ServiceName    string // OTEL_SERVICE_NAME
}

func readTracing(p *envParser) Tracing {
	t := Tracing{
		Exporter:       p.oneOf("OTEL_TRACES_EXPORTER", "", "", "otlp", "none"),
		Endpoint:       p.str("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
		TracesEndpoint: p.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""),
		ServiceName:    p.str("OTEL_SERVICE_NAME", "stampede-guard"),
	}
	p.endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", t.Endpoint)
	p.endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", t.TracesEndpoint)
	return t
}

// endpoint checks an OTLP/HTTP endpoint: an http or https URL with a host.
// A malformed one was accepted and every export failed in the background,
// seen only at shutdown ("no Host in request URL").
func (p *envParser) endpoint(name, v string) {
	if v == "" {
		return
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(name, v, "want an http or https URL with a host (e.g. http://otel-collector:4318)")
	}
}

// On: tracing is off by default and costs nothing then; an OTLP endpoint
// or OTEL_TRACES_EXPORTER=otlp turns it on, OTEL_TRACES_EXPORTER=none
// keeps it off whatever else is set.
func (t Tracing) On() bool {
	switch t.Exporter {
	case "otlp":
		return true
	case "none":
		return false
	}
	return t.Endpoint != "" || t.TracesEndpoint != ""
}
