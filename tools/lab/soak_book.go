package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"
)

// outcome is how one soak request ended.
type outcome struct {
	status  int           // 0: no answer
	body    string        // the first bytes of the answer
	err     string        // the client's error when there was no answer
	killed  bool          // sent to an instance the soak SIGKILLed before it answered
	latency time.Duration // until the answer, or the error
	kind    string        // of request: hot, cold, list, write, order…
	fault   string        // the fault staged (or recovered from) when it was sent, "" before the first
}

// minuteStats counts the requests sent in one minute of the soak.
type minuteStats struct {
	Requests   int            `json:"requests"`
	OK         int            `json:"ok"`
	Status     map[string]int `json:"status,omitempty"` // answers other than 2xx, by status
	Causes     map[string]int `json:"causes,omitempty"` // 5xx by "status error", and unanswered by reason
	Unanswered int            `json:"unanswered"`
	Cut        int            `json:"cut_by_kill"` // connections of a SIGKILLed instance
	ServerErr  int            `json:"server_errors"`
	P99Ms      float64        `json:"p99_ms"`
	MaxMs      float64        `json:"max_ms"`
	lat        []time.Duration
}

// book is the soak's per-minute account of its requests.
type book struct {
	mu    sync.Mutex
	start time.Time
	last  int // the run's last minute (0-based)
	mins  []*minuteStats
}

func newBook(start time.Time, d time.Duration) *book {
	return &book{start: start, last: max(0, int((d-1)/time.Minute))}
}

// add records o under the minute in which its request was sent (an order
// retried after the run's end under its last).
func (b *book) add(sent time.Time, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := min(int(sent.Sub(b.start)/time.Minute), b.last)
	for len(b.mins) <= m {
		b.mins = append(b.mins, &minuteStats{Status: map[string]int{}, Causes: map[string]int{}})
	}
	s := b.mins[m]
	s.Requests++
	s.lat = append(s.lat, o.latency)
	switch {
	case o.status >= 200 && o.status < 300:
		s.OK++
	case o.status != 0:
		s.Status[strconv.Itoa(o.status)]++
		if o.status >= 500 {
			s.Causes[cause(o, fmt.Sprintf("%d %q", o.status, errorText(o.body)))]++
			if o.status != 503 && !outcomeUnknown(o) {
				s.ServerErr++
			}
		}
	case o.killed:
		s.Cut++
	default:
		s.Unanswered++
		s.Causes[cause(o, "no answer: "+o.err)]++
	}
}

// minutes returns a copy of the minutes so far with their latency
// percentiles filled in.
func (b *book) minutes() []minuteStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]minuteStats, len(b.mins))
	for i, m := range b.mins {
		out[i] = *m
		out[i].Status, out[i].Causes = maps.Clone(m.Status), maps.Clone(m.Causes)
		out[i].P99Ms, out[i].MaxMs = ms(percentile(m.lat, 99)), ms(percentile(m.lat, 100))
		out[i].lat = nil
	}
	return out
}

// cause names a failure with the request's kind and the fault staged
// when it was sent.
func cause(o outcome, what string) string {
	during := "no fault yet"
	if o.fault != "" {
		during = o.fault
	}
	return fmt.Sprintf("%s on %s during %s", what, o.kind, during)
}

// errorText is the "error" of a JSON error body, or its first bytes.
func errorText(body string) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Error != "" {
		return e.Error
	}
	body = strings.TrimSpace(body)
	return body[:min(len(body), 80)]
}

// totals adds up the minutes.
func totals(ms []minuteStats) minuteStats {
	t := minuteStats{Status: map[string]int{}, Causes: map[string]int{}}
	for _, m := range ms {
		t.Requests += m.Requests
		t.OK += m.OK
		t.Unanswered += m.Unanswered
		t.Cut += m.Cut
		t.ServerErr += m.ServerErr
		t.MaxMs = max(t.MaxMs, m.MaxMs)
		for k, v := range m.Status {
			t.Status[k] += v
		}
		for k, v := range m.Causes {
			t.Causes[k] += v
		}
	}
	return t
}

// outcomeUnknown reports the 504 of a write whose COMMIT went unanswered
// (a dropped connection, a restart): the service's honest answer that it
// may or may not have been applied, not a failure of its own. The orders
// check still judges what such a write did (lost, duplicated).
func outcomeUnknown(o outcome) bool {
	return o.status == 504 && strings.Contains(errorText(o.body), "may or may not have been applied")
}
