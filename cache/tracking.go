package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// trackingChannel is where Redis sends the invalidations of a RESP2 client
// that redirects them to a connection subscribed to it.
const trackingChannel = "__redis__:invalidate"

// trackingName names the tracking connection in CLIENT LIST unless
// Config.Tracking sets a ClientName.
const trackingName = "stampede-guard:l1-tracking"

// The pause between failed receives grows from trackRetryMin to
// trackRetryMax, so a Redis outage is not a hot loop of dials.
const (
	trackRetryMin = 50 * time.Millisecond
	trackRetryMax = time.Second
)

// tracker is the connection that hears Redis's CLIENT TRACKING
// invalidations for this Cache's L1.
type tracker struct {
	rdb *redis.Client
	sub *redis.PubSub
	id  atomic.Int64 // CLIENT ID of the current tracking connection
}

// trackingOptions clones base for the tracking client: one RESP2 connection
// (so invalidations arrive as pub/sub messages, which go-redis's PubSub
// reads, rather than RESP3 pushes) whose OnConnect turns tracking on.
// go-redis dials every PubSub connection through OnConnect, so each
// reconnect turns tracking on again by itself.
func trackingOptions(base *redis.Options, prefixes []string, id *atomic.Int64) *redis.Options {
	opt := *base
	opt.Protocol = 2
	opt.PoolSize = 1
	opt.MinIdleConns = 0
	opt.ClientSideCache, opt.ClientSideCacheConfig = nil, nil
	if opt.ClientName == "" {
		opt.ClientName = trackingName
	}
	prefixes = append([]string(nil), prefixes...)
	userHook := base.OnConnect
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if userHook != nil {
			if err := userHook(ctx, cn); err != nil {
				return err
			}
		}
		n, err := enableTracking(ctx, cn, prefixes)
		if err != nil {
			return err
		}
		id.Store(n)
		return nil
	}
	return &opt
}

// enableTracking asks Redis to send, to this very connection, the name of
// every changed key under prefixes (all keys when there are none), and
// returns the connection's id.
func enableTracking(ctx context.Context, cn *redis.Conn, prefixes []string) (int64, error) {
	id, err := cn.Do(ctx, "CLIENT", "ID").Int64()
	if err != nil {
		return 0, fmt.Errorf("cache tracking: client id: %w", err)
	}
	args := []any{"CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST"}
	for _, p := range prefixes {
		args = append(args, "PREFIX", p)
	}
	if err := cn.Do(ctx, args...).Err(); err != nil {
		return 0, fmt.Errorf("cache tracking: client tracking on: %w", err)
	}
	return id, nil
}

// startTracking opens the tracking connection and waits (briefly) for Redis to
// confirm the subscription, so a write made right after New returns is not
// missed. With Redis down it gives up waiting; the listener keeps trying.
func (c *Cache) startTracking(ctx context.Context) *tracker {
	t := &tracker{}
	t.rdb = redis.NewClient(trackingOptions(c.cfg.Tracking, c.cfg.TrackPrefixes, &t.id))
	t.sub = t.rdb.Subscribe(c.life, trackingChannel)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := t.sub.Receive(rctx); err != nil {
		c.log.Warn("cache: L1 tracking not confirmed yet", "err", err)
	} else {
		c.log.Debug("cache: L1 tracking on", "client_id", t.id.Load(), "prefixes", c.cfg.TrackPrefixes)
	}
	return t
}

// closeOnStop closes the tracking connection when the Cache closes: a
// blocked Receive does not watch its context, but returns once its
// connection is closed.
func (c *Cache) closeOnStop(t *tracker) {
	defer c.wg.Done()
	<-c.life.Done()
	_ = t.sub.Close()
	_ = t.rdb.Close()
}

// listenTracking applies Redis's invalidations to L1 until Close. It reads
// with Receive rather than Channel, which hides disconnects: whenever the
// connection is lost or (re)subscribed, changes may have gone unheard, so
// L1 is flushed.
func (c *Cache) listenTracking(t *tracker) {
	defer c.wg.Done()
	var wait time.Duration // 0 after a success: one error alone is retried at once
	for {
		msg, err := t.sub.Receive(c.life)
		if c.life.Err() != nil {
			return
		}
		if err != nil {
			// go-redis also reports FLUSHDB's null payload as an error;
			// the flush is the right answer to that too.
			if wait == 0 {
				c.log.Warn("cache: L1 flushed: tracking interrupted, or the database flushed", "err", err)
			}
			c.flushL1()
			if !sleep(c.life, wait) {
				return
			}
			wait = min(max(2*wait, trackRetryMin), trackRetryMax)
			continue
		}
		wait = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			c.log.Debug("cache: L1 tracking (re)subscribed, L1 flushed", "client_id", t.id.Load())
			c.flushL1()
		case *redis.Message:
			c.applyInvalidation(m)
		}
	}
}

// applyInvalidation drops the L1 entries a tracking message names. A message
// naming no key is Redis's answer to FLUSHDB/FLUSHALL: everything went.
func (c *Cache) applyInvalidation(m *redis.Message) {
	if m.Channel != trackingChannel {
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
