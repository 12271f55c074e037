// Package cache is the read-through cache that keeps a database alive when a
// hot key expires (cache stampede), when Redis restarts, and when a deploy
// empties the cache. It owns the generic Redis mechanics — the entry envelope,
// the token lock with fenced writes, single-flight, stale-while-revalidate,
// XFetch, the in-process L1 and its invalidation — and knows nothing about
// what it caches.
//
// L1 invalidation comes in two kinds. By default a write publishes the key
// on a pub/sub channel, which only this package's own writes do. With
// Config.Tracking, Redis itself reports every change to a tracked key (any
// client's write, redis-cli included, expiry and eviction) through CLIENT
// TRACKING in broadcast mode, and L1 is flushed whenever that report may
// have had a gap (a lost connection, a resubscription, FLUSHDB).
package cache

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/stampede-guard/api/cache/internal/redislock"
	"github.com/stampede-guard/api/internal/loglimit"
	"github.com/stampede-guard/api/internal/redisconn"
)

// ErrLockTimeout means a waiter gave up after LockWait without seeing the
// value that another instance was loading.
var ErrLockTimeout = errors.New("cache: timed out waiting for another load")

var errClosed = errors.New("cache: closed")

// ErrNotObtained means another load of the key holds its lock (Reload):
// a normal outcome, since that load is storing the value now.
var ErrNotObtained = redislock.ErrNotObtained

// LoadFunc computes a value from the source of truth. Returning ErrAbsent
// caches a negative entry; any other error is shared with the waiters and
// cached nowhere, so the next call loads again.
type LoadFunc func(ctx context.Context) ([]byte, error)

// ErrAbsent is returned by a LoadFunc when the value does not exist.
var ErrAbsent = errors.New("cache: value does not exist")

// Cache is a read-through cache over Redis. Its zero value is not usable;
// call New, and Close when done.
type Cache struct {
	rdb     redis.UniversalClient
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	l1      *l1
	tracker *redisconn.Tracking // nil unless L1 is invalidated by CLIENT TRACKING
	group   singleflight.Group  // loads, one per key at a time
	reads   singleflight.Group  // Redis reads of a key, one at a time (sharedRead)
	gets    *getBatch           // GETs that arrive together, sent as one pipeline
	// writes counts this instance's Set and Invalidate calls, so a read
	// that starts after one never joins a read that started before it.
	writes atomic.Uint64
	stats  Stats
	tracer trace.Tracer

	// life ends on Close; background refreshes and shared loads derive from
	// it so shutdown stops them.
	life      context.Context
	stop      context.CancelFunc
	mu        sync.Mutex // guards closed, so wg.Add never races wg.Wait
	closed    bool
	wg        sync.WaitGroup
	refreshes chan struct{} // semaphore of background refreshes
	direct    chan struct{} // semaphore of loads made without the lock tier
	fills     fills         // this instance's waiters, woken by fill signals
	// elsewhere holds the keys whose refresh lock another instance held
	// when this one tried, with when to try again (Config.RefreshRetry).
	elsewhere *lru.Cache[string, time.Time]
	copyMemo  *lru.Cache[string, []int] // copy numbers per key (slots.go); nil without copies
	outage    loglimit.PerSecond        // rate limit of the per-request outage warnings
	corrupt   sync.Map                  // keys whose corrupt value was already logged
	static    map[string]bool           // Config.Static, namespaced; read-only after New
	floors    *floors                   // per-key version floors; nil without Config.Version
	pending   *pending                  // keys whose invalidation failed (pending.go)
}

// New builds a Cache and, when L1 is on, subscribes to the invalidation
// channel, or turns on tracking (waiting up to a second for Redis to confirm
// either), and listens on it.
func New(ctx context.Context, rdb redis.UniversalClient, cfg Config, log *slog.Logger) *Cache {
	cfg = cfg.withDefaults()
	cfg.SigningKey = bytes.Clone(cfg.SigningKey)
	life, stop := context.WithCancel(context.Background())
	c := &Cache{
		rdb:       rdb,
		cfg:       cfg,
		log:       log,
		now:       time.Now,
		life:      life,
		stop:      stop,
		refreshes: make(chan struct{}, cfg.MaxRefreshes),
		direct:    make(chan struct{}, cfg.MaxDirectLoads),
		static:    make(map[string]bool, len(cfg.Static)),
		elsewhere: newElsewhere(),
		copyMemo:  newCopyMemo(cfg.Copies),
		tracer:    newTracer(cfg.TracerProvider),
		pending:   newPending(),
	}
	c.gets = startGetBatch(life, rdb, &c.wg)
	c.wg.Add(1)
	go c.retryPending()
	if cfg.Version != nil {
		c.floors = newFloors(floorSize)
	}
	for _, k := range cfg.Static {
		c.static[c.named(k)] = true
	}
	if cfg.L1TTL > 0 {
		c.l1 = newL1(cfg.L1Size, cfg.L1TTL, min(cfg.L1TTL, cfg.NegativeTTL))
		if cfg.Hot != nil && cfg.HotL1TTL > cfg.L1TTL {
			c.l1.hotTTL, c.l1.hot = cfg.HotL1TTL, c.hotL1
		}
		if cfg.Tracking != nil {
			c.l1.only = cfg.TrackPrefixes
		}
	}
	// Listeners start once every field they read is set.
	if cfg.Mode.locks() {
		sub := c.subscribe(ctx, rdb, cfg.FillChannel)
		c.wg.Add(1)
		go c.listenFills(sub)
	}
	switch {
	case c.l1 == nil:
	case cfg.Tracking != nil:
		c.tracker = c.startTracking(ctx)
		c.wg.Add(2)
		go c.closeOnStop(c.tracker)
		go c.listenTracking(c.tracker)
	default:
		sub := c.subscribe(ctx, rdb, cfg.Channel)
		c.wg.Add(1)
		go c.listen(sub)
	}
	return c
}

// Close stops background refreshes and the invalidation listener and waits
// for them to end.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.wg.Wait()
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() StatsSnapshot {
	s := c.stats.snapshot()
	s.InvalidationsPending = c.pending.n.Load()
	return s
}

// track registers a background goroutine unless the Cache is closing.
func (c *Cache) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// owned starts work the Cache owns on behalf of ctx's caller (a shared
// load, a background refresh, a copy respread): detached from ctx's
// cancellation, since one caller giving up must not cancel what others
// share, while keeping ctx's values (the trace); bounded by limit; cancelled
// by Close, which waits until done is called. ok is false once the Cache is
// closing: nothing may start then.
func (c *Cache) owned(ctx context.Context, limit time.Duration) (octx context.Context, done func(), ok bool) {
	if !c.track() {
		return nil, nil, false
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	stop := context.AfterFunc(c.life, cancel)
	return octx, func() {
		stop()
		cancel()
		c.wg.Done()
	}, true
}
