package middleware

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// AccessLog writes one JSON line per request, byte for byte the line slog's
// JSONHandler writes for the same record, without slog's per-record work:
// building a Record, walking its attributes, and formatting duration_ms
// through encoding/json (slog's own comment: "expensive, but floats are
// rare"; here there is one per request). On a hot key that work was a tenth
// of the answer's CPU. A line whose strings need escaping, or whose float
// encoding/json would write in exponent form, goes through slog itself, so
// the output never differs.
type AccessLog struct {
	out   io.Writer
	level slog.Leveler
	slow  *slog.Logger // the same lines through slog, for what the fast path does not encode
	bufs  sync.Pool    // *[]byte
	clock clock        // the current second, formatted
}

// NewAccessLog writes access lines at level or above to out (a line is one
// Write; out is typically logbuf's batching writer).
func NewAccessLog(out io.Writer, level slog.Leveler) *AccessLog {
	return &AccessLog{
		out: out, level: level,
		slow: slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level})),
		bufs: sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }},
	}
}

// accessLine is what RequestLog records of one request.
type accessLine struct {
	at                       time.Time // when it ended: the line's time
	requestID, method, route string
	status                   int
	durationMs               float64
	cache, clientIP          string
}

// Enabled reports whether a line at level would be written.
func (a *AccessLog) Enabled(level slog.Level) bool { return level >= a.level.Level() }

func (a *AccessLog) write(ctx context.Context, level slog.Level, l accessLine) {
	// The method is the client's (net/http takes any token, 20 000
	// characters too); bound every string the same way.
	l.requestID, l.method, l.route = clip(l.requestID), clip(l.method), clip(l.route)
	l.cache, l.clientIP = clip(l.cache), clip(l.clientIP)
	if !plain(l.requestID) || !plain(l.method) || !plain(l.route) || !plain(l.cache) || !plain(l.clientIP) ||
		!fixedPoint(l.durationMs) {
		a.slow.LogAttrs(ctx, level, "request",
			slog.String("request_id", l.requestID), slog.String("method", l.method),
			slog.String("route", l.route), slog.Int("status", l.status),
			slog.Float64("duration_ms", l.durationMs), slog.String("cache", l.cache),
			slog.String("client_ip", l.clientIP))
		return
	}
	bp := a.bufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = a.clock.append(b, l.at)
	b = append(b, `","level":"`...)
	b = append(b, level.String()...)
	b = append(b, `","msg":"request","request_id":"`...)
	b = append(b, l.requestID...)
	b = append(b, `","method":"`...)
	b = append(b, l.method...)
	b = append(b, `","route":"`...)
	b = append(b, l.route...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, l.durationMs, 'f', -1, 64)
	b = append(b, `,"cache":"`...)
	b = append(b, l.cache...)
	b = append(b, `","client_ip":"`...)
	b = append(b, l.clientIP...)
	b = append(b, "\"}\n"...)
	_, _ = a.out.Write(b) // a log failure must not fail the request
	*bp = b
	a.bufs.Put(bp)
}

// maxLogValue bounds each string of an access line; a longer one keeps its
// first maxLogValue bytes and a marker.
const maxLogValue = 64

// truncated marks a clipped value (ASCII: the line stays on the fast path).
const truncated = "...(truncated)"

func clip(s string) string {
	if len(s) <= maxLogValue {
		return s
	}
	return s[:maxLogValue] + truncated
}

// plain reports whether s goes into a JSON string as it is: printable
// ASCII but the quote and the backslash (what slog copies unescaped).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// fixedPoint reports whether encoding/json writes f as strconv's 'f'
// format does: a finite value that is 0 or between 1e-6 and 1e21.
func fixedPoint(f float64) bool {
	a := math.Abs(f)
	return !math.IsInf(f, 0) && !math.IsNaN(f) && (a == 0 || a >= 1e-6 && a < 1e21)
}
