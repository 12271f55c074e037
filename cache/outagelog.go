package cache

import "log/slog"

// warnOutage logs a warning of the paths every request takes while Redis
// is away (read failed, lock unavailable): one line a second, with how
// many were left out (internal/loglimit).
func (c *Cache) warnOutage(msg string, args ...any) {
	c.outage.Log(c.log, slog.LevelWarn, msg, args...)
}
