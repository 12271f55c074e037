package cache

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/redisconn"
)

// The pause between failed receives grows from trackRetryMin to
// trackRetryMax, so a Redis outage is not a hot loop of dials.
const (
	trackRetryMin = 50 * time.Millisecond
	trackRetryMax = time.Second
)

// trackHealthEvery is how long the tracking connection may stay silent
// before the listener pings it; a ping unanswered for as long again means
// the connection is dead though no error says so (a half-open TCP link).
const trackHealthEvery = time.Second

// startTracking opens the tracking connection (Config.Tracking) and
// subscribes it, waiting up to a second for Redis to confirm.
func (c *Cache) startTracking(ctx context.Context) *redisconn.Tracking {
	t, err := redisconn.OpenTracking(ctx, c.cfg.Tracking, c.cfg.TrackPrefixes)
	if err != nil {
		c.log.Warn("cache: invalidation channel not confirmed yet", "channel", redisconn.TrackingChannel, "err", err)
	}
	return t
}

// closeOnStop closes the tracking connection when the Cache closes: a
// blocked Receive does not watch its context, but returns once its
// connection is closed.
func (c *Cache) closeOnStop(t *redisconn.Tracking) {
	defer c.wg.Done()
	<-c.life.Done()
	t.Close()
}

// listenTracking applies Redis's invalidations to L1 until Close. It reads
// with ReceiveTimeout rather than Channel, which hides disconnects: whenever
// the connection is lost, silent, or (re)subscribed, changes may have gone
// unheard, so L1 is flushed.
func (c *Cache) listenTracking(t *redisconn.Tracking) {
	defer c.wg.Done()
	var wait time.Duration // 0 after a success: one error alone is retried at once
	pinged := false        // a health ping is waiting for its answer
	for {
		sub := t.Current()
		msg, err := sub.ReceiveTimeout(c.life, trackHealthEvery)
		if c.life.Err() != nil {
			return
		}
		var netErr net.Error
		silent := err != nil && errors.As(err, &netErr) && netErr.Timeout()
		switch {
		case silent && !pinged:
			pinged = true
			pctx, cancel := context.WithTimeout(c.life, trackHealthEvery)
			_ = sub.Ping(pctx) // a failed write surfaces in the next receive
			cancel()
			continue
		case silent:
			c.log.Warn("cache: L1 flushed: the tracking connection stopped answering; reconnecting")
			c.flushL1()
			pinged = false
			if !t.Renew(c.life) {
				return
			}
			continue
		case err != nil:
			// go-redis also reports FLUSHDB's null payload as an error;
			// the flush is the right answer to that too.
			if wait == 0 {
				c.log.Warn("cache: L1 flushed: tracking interrupted, or the database flushed", "err", err)
			}
			c.flushL1()
			pinged = false
			if !sleep(c.life, wait) {
				return
			}
			wait = min(max(2*wait, trackRetryMin), trackRetryMax)
			continue
		}
		wait, pinged = 0, false
		switch m := msg.(type) {
		case *redis.Subscription:
			c.log.Debug("cache: L1 tracking (re)subscribed, L1 flushed", "client_id", t.ID())
			c.flushL1()
		case *redis.Message:
			c.applyInvalidation(m)
		}
	}
}

// applyInvalidation drops the L1 entries a tracking message names. A message
// naming no key is Redis's answer to FLUSHDB/FLUSHALL: everything went.
func (c *Cache) applyInvalidation(m *redis.Message) {
	if m.Channel != redisconn.TrackingChannel {
		return
	}
	keys := m.PayloadSlice
	if m.Payload != "" {
		keys = append(keys, m.Payload)
	}
	if len(keys) == 0 {
		c.flushL1()
		return
	}
	for _, k := range keys {
		c.l1.remove(k)
		if base, ok := baseKey(k); ok {
			c.l1.remove(base)
		}
	}
	c.stats.l1Invalidations.Add(int64(len(keys)))
}

// flushL1 empties L1 when invalidations may have been missed.
func (c *Cache) flushL1() {
	c.l1.purge()
	c.stats.l1Flushes.Add(1)
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
