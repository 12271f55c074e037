package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/internal/admin"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/telemetry"
)

// The admin listener's wiring: what it is built from, the settings the
// console shows (by their variable names, which only internal/config and
// the composition root know), and the gin side of its request tally.

// startAdmin serves the console, its state feed and pprof on ADMIN_ADDR.
// When the default address is taken, most likely by another instance on
// this host, it falls back to a free loopback port: that must not stop
// this instance from serving. An address the user chose still fails.
func startAdmin(ctx context.Context, d *deps, m *telemetry.Metrics, reads *admin.RequestTally) (stop func(), err error) {
	cfg, log := d.cfg, d.log
	recent, stopWatch := admin.WatchLocks(ctx, d.rdb, cfg.FillChannel())
	adm := &admin.Server{Cache: d.cache, Pools: d.pools(), Breakers: d.breakers(), Refusals: m.Refusals, Redis: d.rdb, Log: log,
		Token: cfg.AdminToken, Settings: consoleSettings(cfg), Reads: reads, Hot: d.hot, Recent: recent}
	stopAdmin, err := adm.Listen(cfg.AdminAddr)
	if err != nil && !cfg.AdminAddrSet && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("admin: default address busy, using a free loopback port", "busy", cfg.AdminAddr)
		stopAdmin, err = adm.Listen("127.0.0.1:0")
	}
	if err != nil {
		stopWatch()
		return nil, fmt.Errorf("%w (ADMIN_ADDR; \"off\" disables the admin listener)", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = stopAdmin(ctx)
		stopWatch() // before Redis closes
	}, nil
}

// consoleSettings are the settings that decide how a stampede plays out.
func consoleSettings(cfg config.Config) []admin.Setting {
	hot := make([]string, len(cfg.WarmKeys))
	for i, id := range cfg.WarmKeys {
		hot[i] = fmt.Sprint(id)
	}
	waiter := map[int]string{0: "wait", 1: "fail", 2: "load"}[int(cfg.LockWaiter)]
	return []admin.Setting{
		{Name: "CACHE_MODE", Value: string(cfg.CacheMode)},
		{Name: "CACHE_TTL", Value: cfg.CacheTTL.String()},
		{Name: "CACHE_SOFT_TTL", Value: cfg.CacheSoftTTL.String()},
		{Name: "L1_TTL", Value: cfg.L1TTL.String()},
		{Name: "LOCK_TTL", Value: cfg.LockTTL.String()},
		{Name: "LOCK_WAIT", Value: cfg.LockWait.String()},
		{Name: "LOCK_WAITER", Value: waiter},
		{Name: "REQUEST_TIMEOUT", Value: cfg.RequestTimeout.String()},
		{Name: "RATE_LIMIT", Value: cfg.RateLimit},
		{Name: "SHED_MAX_WAITING", Value: fmt.Sprint(cfg.ShedMaxWaiting)},
		{Name: "HOT_KEYS", Value: strings.Join(hot, ",")},
		{Name: "CACHE_NAMESPACE", Value: cfg.CacheNamespace},
	}
}

// countRequests feeds the console's tally: every request, and GET/HEAD
// /products/:id by id once the handler has answered it (the tally keeps
// only ids the handler took: admin.RequestTally.Read).
func countRequests(t *admin.RequestTally) gin.HandlerFunc {
	return func(c *gin.Context) {
		t.Request()
		c.Next()
		if c.FullPath() == "/products/:id" && (c.Request.Method == "GET" || c.Request.Method == "HEAD") {
			t.Read(c.Param("id"), c.Writer.Status())
		}
	}
}
