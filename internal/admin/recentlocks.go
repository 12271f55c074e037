package admin

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
)

// The console's recent lock holders. Locks live milliseconds, so a
// once-a-second look at Redis almost never sees one: every holder on every
// instance announces its fill or release on the fill channel, and
// LockHistory keeps what it heard over consoleWindow.

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
				key, filled := cache.ReadFill(m.Payload)
				h.seen(key, filled, time.Now())
			}
		}
	}()
	return h, func() { cancel(); <-done }
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
