package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// logger sends go-redis's own log lines (pool dial failures, pub/sub
// reconnects, truncated durations) through the app's slog logger, so they
// are JSON like every other line instead of plain text mixed into the log.
type logger struct{ log *slog.Logger }

// Printf implements go-redis's internal.Logging. go-redis logs only what
// went wrong, so the lines are warnings.
func (l logger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "logger", "go-redis")
}

// SetLogger installs log as go-redis's logger, for every client of the
// process: go-redis keeps one logger per process, not per client, so the
// last caller owns it. A process runs one app, so in production that is the
// app's logger; tests that start several apps in one process share the last
// one's. Call it before Open, so no line is logged as plain text.
func SetLogger(log *slog.Logger) { redis.SetLogger(logger{log: log}) }
