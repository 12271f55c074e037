package redisconn

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// TrackingChannel is where Redis sends the invalidations of a RESP2 client
// that redirects them to a connection subscribed to it.
const TrackingChannel = "__redis__:invalidate"

// trackingName names the tracking connection in CLIENT LIST unless the
// base options set a ClientName.
const trackingName = "stampede-guard:l1-tracking"

// confirmWait bounds how long OpenTracking waits for Redis to confirm the
// first subscription.
const confirmWait = time.Second

// Tracking is a dedicated connection that hears Redis's CLIENT TRACKING
// invalidations (BCAST mode): Redis names on it every changed key under its
// prefixes, whichever client changed it. Every connection it dials turns
// tracking on before it is used, so a reconnect never leaves it subscribed
// but deaf. What the reports mean, and what a gap in them costs, is the
// reader's business (package cache flushes its L1).
type Tracking struct {
	rdb    *redis.Client
	id     atomic.Int64 // CLIENT ID of the current tracking connection
	mu     sync.Mutex   // guards sub and closed
	sub    *redis.PubSub
	closed bool
}

// TrackingBase is the options a Tracking connection for rdb's server is
// cloned from, or nil when rdb is a Cluster client: tracking is per server,
// and each node of a cluster reports only its own keys.
func TrackingBase(rdb redis.UniversalClient) *redis.Options {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	return c.Options()
}

// OpenTracking opens a tracking connection from base (cloned; ClientName
// defaults to "stampede-guard:l1-tracking") for the keys under prefixes
// (every key when there are none), and subscribes it to TrackingChannel.
// It waits up to a second, or until ctx ends, for Redis to confirm, and
// returns the Tracking even when that fails: the connection keeps
// reconnecting, and the error only says the reports may not flow yet.
// Close it when done.
func OpenTracking(ctx context.Context, base *redis.Options, prefixes []string) (*Tracking, error) {
	t := &Tracking{}
	t.rdb = redis.NewClient(trackingOptions(base, prefixes, &t.id))
	// The subscription outlives ctx: only Close ends it.
	t.sub = t.rdb.Subscribe(context.WithoutCancel(ctx), TrackingChannel)
	rctx, cancel := context.WithTimeout(ctx, confirmWait)
	defer cancel()
	if _, err := t.sub.Receive(rctx); err != nil {
		return t, fmt.Errorf("redisconn: tracking subscription not confirmed: %w", err)
	}
	return t, nil
}

// ID is the CLIENT ID of the current tracking connection (0 before the
// first connection).
func (t *Tracking) ID() int64 { return t.id.Load() }

// Current is the subscription to read the reports from. It changes only on
// Renew.
func (t *Tracking) Current() *redis.PubSub {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sub
}

// Renew abandons a connection that stopped answering: a fresh subscription
// dials a new connection, which turns tracking on again. The dial runs
// outside the lock (and on ctx, which should end when the reader stops), so
// Close never waits for it. It reports false once the Tracking is closed.
func (t *Tracking) Renew(ctx context.Context) bool {
	fresh := t.rdb.Subscribe(ctx, TrackingChannel)
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

// Close closes the subscription and its client: a Receive blocked on it
// does not watch its context, but returns once its connection is closed.
func (t *Tracking) Close() {
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
		return 0, fmt.Errorf("redisconn tracking: client id: %w", err)
	}
	args := []any{"CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST"}
	for _, p := range prefixes {
		args = append(args, "PREFIX", p)
	}
	if err := cn.Do(ctx, args...).Err(); err != nil {
		return 0, fmt.Errorf("redisconn tracking: client tracking on: %w", err)
	}
	return id, nil
}
