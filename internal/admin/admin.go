// Package admin is the operator's side of the API: the live console, its
// JSON state feed and pprof, on a listener of their own (ADMIN_ADDR), never
// on the public port. It protects against clients reading pprof and lock
// names (the guard: a loopback Host, or ADMIN_TOKEN), a profile kept
// running for as long as a caller asks (the seconds cap), a console feed
// that walks the whole keyspace on every poll (bounded lock listing), and a
// request tally that grows with whatever ids clients send (validated ids
// only, bounded). It knows no environment variable: internal/app fills a
// Server and calls Listen.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/console"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/middleware"
)

// state is what the console polls once a second: counters (the page
// charts their per-second deltas) and the current state of every guard.
type state struct {
	TimeMillis int64               `json:"time_ms"`
	Cache      cache.StatsSnapshot `json:"cache"`
	Breakers   map[string]string   `json:"breakers"`
	// BreakerDetail adds each breaker's next probe and failed probes.
	BreakerDetail map[string]breaker.Snapshot `json:"breaker_detail"`
	Pools         []poolState                 `json:"pools"`
	Refused       map[string]int64            `json:"refused"`
	Locks         []lockHolder                `json:"locks"`
	// The console's reading aids (console_feed.go, recentlocks.go): the running settings,
	// the requests this instance served (against its database queries:
	// the pools' acquires), the keys requested most and the locks held
	// on any instance over the last 10 s.
	Settings    []Setting    `json:"settings"`
	Requests    int64        `json:"requests"`
	TopKeys     []keyCount   `json:"top_keys"`
	RecentLocks []recentLock `json:"recent_locks"`
	// HotKeys are what the detector promoted (or watches) this window.
	HotKeys []hotkeys.Rate `json:"hot_keys"`
}

type poolState struct {
	Name              string `json:"name"`
	Acquired          int32  `json:"acquired"`
	Idle              int32  `json:"idle"`
	Max               int32  `json:"max"`
	Waiting           int64  `json:"waiting"`
	Acquires          int64  `json:"acquires"`
	Shed              int64  `json:"shed"`
	CircuitOpen       int64  `json:"circuit_open"`
	StatementTimeouts int64  `json:"statement_timeouts"`
}

type lockHolder struct {
	Key   string `json:"key"`
	TTLMs int64  `json:"ttl_ms"`
}

// Server serves the operator's side: the live console, its JSON feed and
// pprof. It listens on ADMIN_ADDR (loopback by default), never on the
// public port, because pprof and lock names are not for clients.
type Server struct {
	Cache    *cache.Cache
	Pools    []*db.Pool
	Breakers map[string]func() breaker.Snapshot
	// Refusals are the requests refused before a handler, by
	// "reason/class" (the metrics keep them).
	Refusals func() map[string]int64
	Redis    redis.UniversalClient
	Log      *slog.Logger
	// Token (ADMIN_TOKEN), when set, is required on every request; when
	// empty, only requests naming a loopback Host are served (see guard).
	Token    string
	Hot      *hotkeys.Detector // nil with HOT_KEY_DETECT=false
	Settings []Setting         // shown as they are
	Reads    *RequestTally     // nil: no request counts
	Recent   *LockHistory      // nil: no lock history
	// maxProfile caps pprof's ?seconds= (maxProfileDefault when zero).
	maxProfile time.Duration
}

// maxProfileDefault caps every profile's ?seconds=: ?seconds=1000 must not
// keep a profiler (and its overhead) running for a quarter of an hour.
const maxProfileDefault = 30 * time.Second

func (a *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", console.Handler())
	mux.HandleFunc("GET /api/state", a.state)
	// Every profile takes ?seconds=, not only profile and trace: the named
	// ones (allocs, heap, goroutine, block, mutex…) answer a delta over
	// that long, so the cap wraps the whole tree.
	mux.Handle("GET /debug/pprof/", a.capSeconds(http.HandlerFunc(pprof.Index)))
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.Handle("GET /debug/pprof/profile", a.capSeconds(http.HandlerFunc(pprof.Profile)))
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.Handle("GET /debug/pprof/trace", a.capSeconds(http.HandlerFunc(pprof.Trace)))
	return middleware.NosniffHandler(a.guard(mux))
}

func (a *Server) state(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	st := state{
		TimeMillis:    time.Now().UnixMilli(),
		Cache:         a.Cache.Stats(),
		Breakers:      map[string]string{},
		BreakerDetail: map[string]breaker.Snapshot{},
		Refused:       a.Refusals(),
		Locks:         a.lockHolders(ctx),
		Settings:      a.Settings,
		TopKeys:       []keyCount{},
		RecentLocks:   a.Recent.recent(20),
		HotKeys:       hotKeyRates(a.Hot),
	}
	if a.Reads != nil {
		st.Requests = a.Reads.requests.Load()
		st.TopKeys = a.Reads.top(10)
	}
	for name, snapshot := range a.Breakers {
		b := snapshot()
		st.Breakers[name] = b.State.String()
		st.BreakerDetail[name] = b
	}
	for _, p := range a.Pools {
		ps := p.Stat()
		shed, tripped := p.Refused()
		st.Pools = append(st.Pools, poolState{
			Name: p.Name(), Acquired: ps.AcquiredConns(), Idle: ps.IdleConns(), Max: ps.MaxConns(),
			Waiting: p.Waiting(), Acquires: ps.AcquireCount(), Shed: shed, CircuitOpen: tripped,
			StatementTimeouts: p.StatementTimeouts(),
		})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(st)
}

// Bounds of the console's lock listing, which runs on every poll (once a
// second per open console): a cache of millions of keys must not make that
// a walk of the whole keyspace.
const (
	maxLockHolders = 100
	maxScanPages   = 10 // of scanPage keys each: at most 10 000 keys looked at
	scanPage       = 1000
)

// lockHolders lists lock keys with their remaining TTL: SCAN (never KEYS)
// for a bounded number of pages, then every PTTL in one pipeline. On a
// Redis Cluster each master holds its own slots' keys, so every master is
// scanned (in parallel, each within the same bounds).
func (a *Server) lockHolders(ctx context.Context) []lockHolder {
	var keys []string
	if cc, ok := a.Redis.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			found := a.scanLocks(ctx, node)
			mu.Lock()
			keys = append(keys, found...)
			mu.Unlock()
			return nil
		})
		if err != nil {
			a.Log.Debug("admin: listing locks failed", "err", err)
		}
		sort.Strings(keys) // the same first keys on every poll, whichever master answered first
	} else {
		keys = a.scanLocks(ctx, a.Redis)
	}
	keys = keys[:min(len(keys), maxLockHolders)]
	cmds, err := a.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.PTTL(ctx, k)
		}
		return nil
	})
	out := []lockHolder{}
	if err != nil && !errors.Is(err, redis.Nil) {
		a.Log.Debug("admin: reading lock TTLs failed", "err", err)
		return out
	}
	for i, cmd := range cmds {
		if ttl, err := cmd.(*redis.DurationCmd).Result(); err == nil && ttl >= 0 {
			out = append(out, lockHolder{Key: keys[i], TTLMs: ttl.Milliseconds()})
		} // else released between SCAN and PTTL
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// scanLocks walks one server's lock keys, within the listing's bounds.
func (a *Server) scanLocks(ctx context.Context, rdb redis.Cmdable) []string {
	var keys []string
	var cursor uint64
	for page := 0; page < maxScanPages && len(keys) < maxLockHolders; page++ {
		batch, next, err := rdb.Scan(ctx, cursor, a.Cache.LockPattern(), scanPage).Result()
		if err != nil {
			a.Log.Debug("admin: listing locks failed", "err", err)
			break
		}
		keys = append(keys, batch...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	return keys
}

// Listen starts the admin listener on addr; stop shuts it down.
func (a *Server) Listen(addr string) (stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listen %s: %w", addr, err)
	}
	// A non-loopback address without ADMIN_TOKEN never gets here: the
	// configuration refuses it (internal/config/guards.go).
	srv := &http.Server{
		Handler:           a.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		// pprof's profile and trace stream for up to their ?seconds= value,
		// which capSeconds bounds.
		WriteTimeout: maxProfileDefault + 30*time.Second,
		IdleTimeout:  time.Minute,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			a.Log.Error("admin server stopped", "err", err)
		}
	}()
	a.Log.Info("admin listening", "addr", ln.Addr().String())
	return srv.Shutdown, nil
}
