package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisLogger sends go-redis's own log lines (pool dial failures, pub/sub
// reconnects, truncated durations) through the app's slog logger, so they
// are JSON like every other line instead of plain text mixed into the log.
type redisLogger struct{ log *slog.Logger }

// Printf implements go-redis's internal.Logging. go-redis logs only what
// went wrong, so the lines are warnings.
func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "logger", "go-redis")
}

// setRedisLogger installs log as go-redis's logger. go-redis keeps one
// logger per process, so the last run to start owns it; a process runs one
// app, so in production that is the app's logger.
func setRedisLogger(log *slog.Logger) { redis.SetLogger(redisLogger{log: log}) }
