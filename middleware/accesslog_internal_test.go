package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"regexp"
	"testing"
)

// TestAccessLogMatchesSlog: every access line is the line slog's
// JSONHandler writes for the same record, but for its time (each takes its
// own now), whether the fast path or slog itself encodes it.
func TestAccessLogMatchesSlog(t *testing.T) {
	plainLine := accessLine{requestID: "a1b2c3", method: "GET", route: "/products/:id", status: 200,
		durationMs: 0.042, cache: "HIT", clientIP: "127.0.0.1"}
	tests := []struct {
		name  string
		level slog.Level
		edit  func(*accessLine)
	}{
		{"a hit", slog.LevelInfo, func(*accessLine) {}},
		{"a 5xx at warn", slog.LevelWarn, func(l *accessLine) { l.status = 503; l.cache = "" }},
		{"no route, no cache", slog.LevelInfo, func(l *accessLine) { l.route = ""; l.status = 404 }},
		{"zero duration", slog.LevelInfo, func(l *accessLine) { l.durationMs = 0 }},
		{"long duration", slog.LevelInfo, func(l *accessLine) { l.durationMs = 123456.789 }},
		{"whole seconds (json writes no exponent)", slog.LevelInfo, func(l *accessLine) { l.durationMs = 1500000 }},
		{"IPv6 client", slog.LevelInfo, func(l *accessLine) { l.clientIP = "2001:db8::1" }},
		{"a method to escape", slog.LevelInfo, func(l *accessLine) { l.method = "GE\"T\\\n" }},
		{"non-ASCII and invalid UTF-8", slog.LevelInfo, func(l *accessLine) { l.route = "/é\u2028\xff" }},
		{"a float json writes with an exponent", slog.LevelInfo, func(l *accessLine) { l.durationMs = 1e-7 }},
		{"huge", slog.LevelInfo, func(l *accessLine) { l.durationMs = 1e22 }},
		{"NaN (slog writes its error)", slog.LevelInfo, func(l *accessLine) { l.durationMs = math.NaN() }},
	}
	timeField := regexp.MustCompile(`^\{"time":"[^"]*",`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := plainLine
			tt.edit(&l)
			var got, want bytes.Buffer
			NewAccessLog(&got, slog.LevelInfo).write(context.Background(), tt.level, l)
			slog.New(slog.NewJSONHandler(&want, nil)).LogAttrs(context.Background(), tt.level, "request",
				slog.String("request_id", l.requestID), slog.String("method", l.method),
				slog.String("route", l.route), slog.Int("status", l.status),
				slog.Float64("duration_ms", l.durationMs), slog.String("cache", l.cache),
				slog.String("client_ip", l.clientIP))
			if !timeField.Match(got.Bytes()) {
				t.Fatalf("line %q does not start with a time field", got.String())
			}
			g, w := timeField.ReplaceAllString(got.String(), ""), timeField.ReplaceAllString(want.String(), "")
			if g != w {
				t.Errorf("line\n%s\nwant (slog)\n%s", got.String(), want.String())
			}
			if !math.IsNaN(l.durationMs) && !json.Valid(got.Bytes()) {
				t.Errorf("line %q is not JSON", got.String())
			}
		})
	}
}

// TestAccessLogLevel: lines under the configured level are not written.
func TestAccessLogLevel(t *testing.T) {
	a := NewAccessLog(&bytes.Buffer{}, slog.LevelWarn)
	if a.Enabled(slog.LevelInfo) || !a.Enabled(slog.LevelWarn) {
		t.Errorf("at LOG_LEVEL=warn: info enabled %v, warn enabled %v; want false, true",
			a.Enabled(slog.LevelInfo), a.Enabled(slog.LevelWarn))
	}
}

// BenchmarkAccessLog compares one access line through the fast path and
// through slog: `go test -run '^$' -bench AccessLog ./middleware`.
func BenchmarkAccessLog(b *testing.B) {
	l := accessLine{requestID: "a1b2c3d4e5f60718", method: "GET", route: "/products/:id", status: 200,
		durationMs: 0.042, cache: "HIT", clientIP: "127.0.0.1"}
	a := NewAccessLog(discard{}, slog.LevelInfo)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.write(context.Background(), slog.LevelInfo, l)
		}
	})
	b.Run("slog", func(b *testing.B) {
		b.ReportAllocs()
		l.method = "GET\n" // forces the slog path
		for b.Loop() {
			a.write(context.Background(), slog.LevelInfo, l)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
