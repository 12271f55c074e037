package app

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/config"
)

// What the console shows beyond counters: the running settings, the
// requests this instance served, the keys requested most and the locks
// held lately. Locks live milliseconds, so a once-a-second look at Redis
// almost never sees one; the recent holders come from the fill channel,
// on which every holder on every instance announces its fill or release.

// consoleWindow is how far back "hot keys" and "recent lock holders" look.
const consoleWindow = 10 * time.Second

// setting is one line of the console's settings table.
type setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// consoleSettings are the settings that decide how a stampede plays out.
func consoleSettings(cfg config.Config) []setting {
	hot := make([]string, len(cfg.WarmKeys))
	for i, id := range cfg.WarmKeys {
		hot[i] = fmt.Sprint(id)
	}
	waiter := map[int]string{0: "wait", 1: "fail", 2: "load"}[int(cfg.LockWaiter)]
	return []setting{
		{"CACHE_MODE", string(cfg.CacheMode)},
		{"CACHE_TTL", cfg.CacheTTL.String()},
		{"CACHE_SOFT_TTL", cfg.CacheSoftTTL.String()},
		{"L1_TTL", cfg.L1TTL.String()},
		{"LOCK_TTL", cfg.LockTTL.String()},
		{"LOCK_WAIT", cfg.LockWait.String()},
		{"LOCK_WAITER", waiter},
		{"REQUEST_TIMEOUT", cfg.RequestTimeout.String()},
		{"RATE_LIMIT", cfg.RateLimit},
		{"SHED_MAX_WAITING", fmt.Sprint(cfg.ShedMaxWaiting)},
		{"HOT_KEYS", strings.Join(hot, ",")},
		{"CACHE_NAMESPACE", cfg.CacheNamespace},
	}
}

// keyCount is a key and how often it was seen in the window.
type keyCount struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// requestTally counts this instance's requests, and its product reads by id, in
// two alternating half-windows, so the top keys cover the last 5-10 s.
type requestTally struct {
	requests atomic.Int64
	mu       sync.Mutex
	cur, old map[int64]int64 // reads by product id
	since    time.Time
}

// maxTracked bounds the distinct keys counted per half-window: a scan of
// made-up ids must not grow the map without limit.
const maxTracked = 10_000

func newRequestTally() *requestTally {
	return &requestTally{cur: map[int64]int64{}, old: map[int64]int64{}, since: time.Now()}
}

// middleware counts every request, and GET/HEAD /products/:id by id once
// the handler has answered it. Only an id the handler took (200, 304, or
// 404 for a valid id no product has) is kept, as a number: a request the
// rate limit, the shedder or the id check refused keeps nothing, and
// whatever a client sends, the tally holds at most 2 × maxTracked
// int64 pairs (two half-windows).
func (h *requestTally) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		h.requests.Add(1)
		c.Next()
		if c.FullPath() != "/products/:id" || c.Request.Method != "GET" && c.Request.Method != "HEAD" {
			return
		}
		switch c.Writer.Status() {
		case http.StatusOK, http.StatusNotModified, http.StatusNotFound:
			if id, ok := canonicalID(c.Param("id")); ok {
				h.add(id) // "product " is added when read: no string built per request
			}
		}
	}
}

// canonicalID reads a positive id in canonical form (no sign, no leading
// zero), as the handler's pathID does; anything else is not counted.
func canonicalID(s string) (int64, bool) {
	if s == "" || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func (h *requestTally) add(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rotate(time.Now())
	if _, ok := h.cur[id]; ok || len(h.cur) < maxTracked {
		h.cur[id]++
	}
}

func (h *requestTally) rotate(now time.Time) {
	switch d := now.Sub(h.since); {
	case d >= consoleWindow:
		h.cur, h.old, h.since = map[int64]int64{}, map[int64]int64{}, now
	case d >= consoleWindow/2:
		h.old, h.cur, h.since = h.cur, map[int64]int64{}, now
	}
}

// top returns the n keys requested most over the window.
func (h *requestTally) top(n int) []keyCount {
	h.mu.Lock()
	h.rotate(time.Now())
	sum := make(map[int64]int64, len(h.cur)+len(h.old))
	for id, v := range h.old {
		sum[id] += v
	}
	for id, v := range h.cur {
		sum[id] += v
	}
	h.mu.Unlock()
	named := make(map[string]int64, len(sum))
	for id, v := range sum {
		named["product "+strconv.FormatInt(id, 10)] = v
	}
	return topN(named, n)
}

func topN(m map[string]int64, n int) []keyCount {
	out := make([]keyCount, 0, len(m))
	for k, v := range m {
		out = append(out, keyCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out[:min(n, len(out))]
}

// recentLock is a key whose lock was held in the window, on any instance.
type recentLock struct {
	Key      string `json:"key"`
	Fills    int64  `json:"fills"`    // holders that stored a value
	Releases int64  `json:"releases"` // holders that let go without one
	AgoMs    int64  `json:"ago_ms"`   // since the last one
}

// lockHistory keeps the lock holders heard on the fill channel lately.
type lockHistory struct {
	mu   sync.Mutex
	keys map[string]*recentLock
	last map[string]time.Time
}

// watchLocks listens on the fill channel until ctx ends or stop is called;
// stop returns once the listener has stopped.
func watchLocks(ctx context.Context, rdb redis.UniversalClient, channel string) (h *lockHistory, stop func()) {
	h = &lockHistory{keys: map[string]*recentLock{}, last: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(ctx)
	sub := rdb.Subscribe(ctx, channel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				key, filled := parseFill(m.Payload)
				h.seen(key, filled, time.Now())
			}
		}
	}()
	return h, func() { cancel(); <-done }
}

// parseFill reads a fill message, "<soft expiry µs> <key>" (cache/signal.go):
// a holder that stored a value sends its soft expiry, one that let go
// without a value sends the zero time (a negative number).
func parseFill(payload string) (key string, filled bool) {
	micros, key, _ := strings.Cut(payload, " ")
	n, err := strconv.ParseInt(micros, 10, 64)
	return key, err == nil && n > 0
}

// seen records one holder's end: a fill (value stored) or a bare release.
func (h *lockHistory) seen(key string, filled bool, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire(now)
	r := h.keys[key]
	if r == nil {
		if len(h.keys) >= maxTracked {
			return
		}
		r = &recentLock{Key: key}
		h.keys[key] = r
	}
	if filled {
		r.Fills++
	} else {
		r.Releases++
	}
	h.last[key] = now
}

func (h *lockHistory) expire(now time.Time) {
	for k, t := range h.last {
		if now.Sub(t) > consoleWindow {
			delete(h.last, k)
			delete(h.keys, k)
		}
	}
}

// recent returns up to n keys, the latest first.
func (h *lockHistory) recent(n int) []recentLock {
	if h == nil {
		return []recentLock{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.expire(now)
	out := make([]recentLock, 0, len(h.keys))
	for k, r := range h.keys {
		c := *r
		c.AgoMs = now.Sub(h.last[k]).Milliseconds()
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].AgoMs != out[j].AgoMs {
			return out[i].AgoMs < out[j].AgoMs
		}
		return out[i].Key < out[j].Key
	})
	return out[:min(n, len(out))]
}
