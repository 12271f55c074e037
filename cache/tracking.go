package cache

import (
	"context"
	"fmt"
	"sync"
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
	rdb    *redis.Client
	id     atomic.Int64 // CLIENT ID of the current tracking connection
	mu     sync.Mutex   // guards sub and closed
	sub    *redis.PubSub
	closed bool
}

// current is the subscription the listener reads.
func (t *tracker) current() *redis.PubSub {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sub
}

// renew abandons a connection that stopped answering: a fresh subscription
// dials a new connection, whose OnConnect turns tracking on again. The dial
// runs outside the lock (and on ctx, which Close ends), so Close never waits
// for it. It reports false once the tracker is closed.
func (t *tracker) renew(ctx context.Context) bool {
	fresh := t.rdb.Subscribe(ctx, trackingChannel)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = fresh.Close()
		return false
	}
	old := t.sub
	t.sub = fresh
	t.mu.Unlock()
	_ = old.Close()
	return true
}

func (t *tracker) close() {
	t.mu.Lock()
	t.closed = true
	sub := t.sub
	t.mu.Unlock()
	_ = sub.Close()
	_ = t.rdb.Close()
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

// startTracking opens the tracking connection and subscribes it.
func (c *Cache) startTracking(ctx context.Context) *tracker {
	t := &tracker{}
	t.rdb = redis.NewClient(trackingOptions(c.cfg.Tracking, c.cfg.TrackPrefixes, &t.id))
	t.sub = c.subscribe(ctx, t.rdb, trackingChannel)
	return t
}

// closeOnStop closes the tracking connection when the Cache closes: a
// blocked Receive does not watch its context, but returns once its
// connection is closed.
func (c *Cache) closeOnStop(t *tracker) {
	defer c.wg.Done()
	<-c.life.Done()
	t.close()
}
