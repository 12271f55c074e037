package admin

import (
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-guard/api/internal/hotkeys"
)

// What the console shows beyond counters: the running settings (named by
// internal/app), the requests this instance served, the keys requested
// most and the locks held lately. Locks live milliseconds, so a
// once-a-second look at Redis almost never sees one; the recent holders
// come from the fill channel, where every holder announces its end.

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

// RequestTally counts this instance's requests, and its product reads by
// id, in two alternating half-windows: the top keys cover the last 5-10 s.
type RequestTally struct {
	requests atomic.Int64
	mu       sync.Mutex
	cur, old map[int64]int64 // reads by product id
	since    time.Time
}

// maxTracked bounds the distinct keys counted per half-window: a scan of
// made-up ids must not grow the map without limit.
const maxTracked = 10_000

// NewRequestTally starts an empty tally.
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
