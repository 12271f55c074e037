package app

import (
	"io"
	"log/slog"
)

// newLogger is the service's JSON logger. Durations are written as Go
// durations ("21ms"), not slog's default of integer nanoseconds
// ("took":21000000), so a line reads the way the settings are written.
func newLogger(w io.Writer, level string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       logLevel(level),
		ReplaceAttr: durationsAsText,
	}))
}

// durationsAsText rewrites a time.Duration attribute as its String form.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// logLevel reads LOG_LEVEL (validated by loadConfig).
func logLevel(level string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return l
}
