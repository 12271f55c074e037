package handlers

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// Check is one readiness probe: a dependency's name and how to ping it.
type Check struct {
	Name string
	Ping func(context.Context) error
}

// Health serves /healthz (the process runs) and /readyz (send it traffic).
// Readiness is false while starting (until MarkReady), while draining, and
// while a dependency does not answer.
type Health struct {
	checks   []Check
	ready    atomic.Bool
	draining atomic.Bool
	timeout  time.Duration
}

// NewHealth builds the probes; each check gets timeout per probe.
func NewHealth(timeout time.Duration, checks ...Check) *Health {
	return &Health{checks: checks, timeout: timeout}
}

// MarkReady ends the start-up phase (after migrations and warm-up).
func (h *Health) MarkReady() { h.ready.Store(true) }

// Drain turns readiness off for good: shutdown has begun.
func (h *Health) Drain() { h.draining.Store(true) }

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
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := true
	for _, chk := range h.checks {
		wg.Go(func() {
			state := "ok"
			if err := chk.Ping(ctx); err != nil {
				state = err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			results[chk.Name] = state
			ok = ok && state == "ok"
		})
	}
	wg.Wait()
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, gin.H{"status": map[bool]string{true: "ready", false: "unavailable"}[ok], "checks": results})
}
