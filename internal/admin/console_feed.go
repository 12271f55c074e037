package admin

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/hotkeys"
)

// What the console shows beyond counters: the running settings, the
// requests this instance served, the keys requested most and the locks
// held lately. Locks live milliseconds, so a once-a-second look at Redis
// almost never sees one; the recent holders come from the fill channel,
// on which every holder on every instance announces its fill or release.

// consoleWindow is how far back "hot keys" and "recent lock holders" look.
const consoleWindow = 10 * time.Second

// Setting is one line of the console's settings table.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// keyCount is a key and how often it was seen in the window.
type keyCount struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// RequestTally counts this instance's requests, and its product reads by id, in
// two alternating half-windows, so the top keys cover the last 5-10 s.
type RequestTally struct {
	requests atomic.Int64
	mu       sync.Mutex
	cur, old map[int64]int64 // reads by product id
	since    time.Time
}

// maxTracked bounds the distinct keys counted per half-window: a scan of
// made-up ids must not grow the map without limit.
const maxTracked = 10_000

func NewRequestTally() *RequestTally {
	return &RequestTally{cur: map[int64]int64{}, old: map[int64]int64{}, since: time.Now()}
}

// Request counts one request, whatever its route and answer.
func (h *RequestTally) Request() { h.requests.Add(1) }

// Read counts a read of GET/HEAD /products/:id once the handler has
// answered it with status. Only an id the handler took (200, 304, or 404
// for a valid id no product has) is kept, as a number: a request the rate
// limit, the shedder or the id check refused keeps nothing, and whatever a
// client sends, the tally holds at most 2 × maxTracked int64 pairs (two
// half-windows).
func (h *RequestTally) Read(id string, status int) {
	switch status {
	case http.StatusOK, http.StatusNotModified, http.StatusNotFound:
		if n, ok := canonicalID(id); ok {
			h.add(n) // "product " is added when read: no string built per request
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

func (h *RequestTally) add(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rotate(time.Now())
	if _, ok := h.cur[id]; ok || len(h.cur) < maxTracked {
		h.cur[id]++
	}
}

func (h *RequestTally) rotate(now time.Time) {
	switch d := now.Sub(h.since); {
	case d >= consoleWindow:
		h.cur, h.old, h.since = map[int64]int64{}, map[int64]int64{}, now
	case d >= consoleWindow/2:
		h.old, h.cur, h.since = h.cur, map[int64]int64{}, now
	}
}

// top returns the n keys requested most over the window.
func (h *RequestTally) top(n int) []keyCount {
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

// hotKeyRates lists the heaviest keys for the console; empty when off.
func hotKeyRates(d *hotkeys.Detector) []hotkeys.Rate {
	if d == nil {
		return []hotkeys.Rate{}
	}
	return d.Top()
}

// recentLock is a key whose lock was held in the window, on any instance.
type recentLock struct {
	Key      string `json:"key"`
	Fills    int64  `json:"fills"`    // holders that stored a value
	Releases int64  `json:"releases"` // holders that let go without one
	AgoMs    int64  `json:"ago_ms"`   // since the last one
}

// LockHistory keeps the lock holders heard on the fill channel lately.
type LockHistory struct {
	mu   sync.Mutex
	keys map[string]*recentLock
	last map[string]time.Time
}

// WatchLocks listens on the fill channel until ctx ends or stop is called;
// stop returns once the listener has stopped.
func WatchLocks(ctx context.Context, rdb redis.UniversalClient, channel string) (h *LockHistory, stop func()) {
	h = &LockHistory{keys: map[string]*recentLock{}, last: map[string]time.Time{}}
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
func (h *LockHistory) seen(key string, filled bool, now time.Time) {
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

func (h *LockHistory) expire(now time.Time) {
	for k, t := range h.last {
		if now.Sub(t) > consoleWindow {
			delete(h.last, k)
			delete(h.keys, k)
		}
	}
}

// recent returns up to n keys, the latest first.
func (h *LockHistory) recent(n int) []recentLock {
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
