package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
)

// Check is one dependency probe: its name and how to ping it.
type Check struct {
	Name string
	Ping func(context.Context) error
}

// ErrBreakerOpen is what a breaker's check returns while it is open.
var ErrBreakerOpen = errors.New("breaker open")

// Health serves /healthz (the process runs) and /readyz (send it traffic).
//
// Readiness speaks for this instance only: it is false while starting
// (until MarkReady: migrations, warm-up) and while draining, and true
// otherwise — even when PostgreSQL or Redis is down or a breaker is open.
// A dependency outage is shared by every instance; if it failed readiness,
// the load balancer would eject the whole fleet at once and turn a degraded
// service (stale values, fast 503s) into no service at all. Dependency
// health is reported in the body, in the client's terms; the driver's
// error, which names hosts, ports, users and databases, goes to the log.
type Health struct {
	checks   []Check
	ready    atomic.Bool
	draining atomic.Bool
	timeout  time.Duration
	log      *slog.Logger
	breakers func() any // optional: breaker snapshots for the body
}

// NewHealth builds the probes; each check gets timeout per probe, and log
// receives the detail of a failed check.
func NewHealth(timeout time.Duration, log *slog.Logger, checks ...Check) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{checks: checks, timeout: timeout, log: log}
}

// ShowBreakers adds where each breaker is (state, time to the next probe,
// failed probes) to the body of /readyz: what an operator asks first when
// checks say "breaker open".
func (h *Health) ShowBreakers(snapshots func() any) { h.breakers = snapshots }

// MarkReady ends the start-up phase (after migrations and warm-up).
func (h *Health) MarkReady() { h.ready.Store(true) }

// Drain turns readiness off for good: shutdown has begun.
func (h *Health) Drain() { h.draining.Store(true) }

// healthz is liveness: it never looks at a dependency, so an outage never
// gets a healthy process restarted.
func (h *Health) healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }

func (h *Health) readyz(c *gin.Context) {
	switch {
	case h.draining.Load():
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "draining"})
		return
	case !h.ready.Load():
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "starting"})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.timeout)
	defer cancel()
	results := make(map[string]string, len(h.checks))
	id := middleware.RequestID(c) // read here: the checks run beside the response's header map
	var mu sync.Mutex
	var wg sync.WaitGroup
	degraded := false
	for _, chk := range h.checks {
		wg.Go(func() {
			state := "ok"
			if err := chk.Ping(ctx); err != nil {
				state = describe(err)
				h.log.Warn("readiness: dependency check failed", "check", chk.Name, "state", state, "err", err,
					"request_id", id)
			}
			mu.Lock()
			defer mu.Unlock()
			results[chk.Name] = state
			degraded = degraded || state != "ok"
		})
	}
	wg.Wait()
	body := gin.H{"status": "ready", "degraded": degraded, "checks": results}
	if h.breakers != nil {
		body["breakers"] = h.breakers()
	}
	c.JSON(http.StatusOK, body)
}

// describe says what is wrong with a dependency in words that reveal
// nothing about the infrastructure.
func describe(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrBreakerOpen):
		return "breaker open"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "unreachable"
	}
}
