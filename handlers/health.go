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
	"golang.org/x/sync/singleflight"

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
//
// /readyz is served before any limit (a probe must never be refused), so
// its checks cannot be per request: one round runs at a time, and its
// answer serves every /readyz for checksReused after it. However often
// clients call it, an instance pings each dependency about once a second
// and logs a failed check as often.
type Health struct {
	checks   []Check
	ready    atomic.Bool
	draining atomic.Bool
	timeout  time.Duration
	reuse    time.Duration // checksReused; tests shorten it
	log      *slog.Logger
	breakers func() any // optional: breaker snapshots for the body

	rounds singleflight.Group
	last   atomic.Pointer[checkRound]
}

// checksReused is how long one round of checks answers /readyz: load
// balancers probe every few seconds, so a second-old state is news to
// them, and a flood of /readyz costs the dependencies one ping a second.
const checksReused = time.Second

// checkRound is one run of every check: each one's state, whether any
// failed, and when the round ended. Never changed once stored.
type checkRound struct {
	states   map[string]string
	degraded bool
	at       time.Time
}

// NewHealth builds the probes; each check gets timeout per probe, and log
// receives the detail of a failed check.
func NewHealth(timeout time.Duration, log *slog.Logger, checks ...Check) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{checks: checks, timeout: timeout, reuse: checksReused, log: log}
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
	round := h.checked(c.Request.Context(), middleware.RequestID(c))
	body := gin.H{"status": "ready", "degraded": round.degraded, "checks": round.states}
	if h.breakers != nil {
		body["breakers"] = h.breakers()
	}
	c.JSON(http.StatusOK, body)
}

// checked returns the last round of checks while it is fresh, else runs
// one, or joins the one running. The round is the caller's only in its
// request id (its log lines carry it): a client gone does not cut it
// short for the others, and h.timeout bounds it.
func (h *Health) checked(ctx context.Context, requestID string) *checkRound {
	if r := h.last.Load(); r != nil && time.Since(r.at) < h.reuse {
		return r
	}
	v, _, _ := h.rounds.Do("checks", func() (any, error) {
		r := h.runChecks(context.WithoutCancel(ctx), requestID)
		h.last.Store(r)
		return r, nil
	})
	return v.(*checkRound)
}

// runChecks pings every dependency at once, each within h.timeout.
func (h *Health) runChecks(ctx context.Context, requestID string) *checkRound {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	r := &checkRound{states: make(map[string]string, len(h.checks))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, chk := range h.checks {
		wg.Go(func() {
			state := "ok"
			if err := chk.Ping(ctx); err != nil {
				state = describe(err)
				h.log.Warn("readiness: dependency check failed", "check", chk.Name, "state", state, "err", err,
					"request_id", requestID)
			}
			mu.Lock()
			defer mu.Unlock()
			r.states[chk.Name] = state
			r.degraded = r.degraded || state != "ok"
		})
	}
	wg.Wait()
	r.at = time.Now()
	return r
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
