package main

import (
	"testing"
	"time"
)

// TestBookClassifies: a 503 is counted but is not a server error, any
// other 5xx is; no answer from a live instance is unanswered, from a
// killed one it is a cut; a request sent after the run's end (an order's
// late retry) counts in the last minute.
func TestBookClassifies(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		name                       string
		at                         time.Duration
		o                          outcome
		minute                     int
		serverErr, unanswered, cut int
		cause                      string
	}{
		{"200", 0, outcome{status: 200}, 0, 0, 0, 0, ""},
		{"503 during a fault", 30 * time.Second, outcome{status: 503, body: `{"error":"retry later"}`, kind: "cold", fault: "redis down"}, 0, 0, 0, 0,
			`503 "retry later" on cold during redis down`},
		{"500", 61 * time.Second, outcome{status: 500, body: `{"error":"internal error"}`, kind: "order"}, 1, 1, 0, 0,
			`500 "internal error" on order during no fault yet`},
		{"client timeout", 61 * time.Second, outcome{err: "client timeout", kind: "hot"}, 1, 0, 1, 0, "no answer: client timeout on hot during no fault yet"},
		{"cut by a kill", 61 * time.Second, outcome{err: "EOF", killed: true}, 1, 0, 0, 1, ""},
		{"late retry", 200 * time.Second, outcome{status: 201}, 2, 0, 0, 0, ""},
	}
	for _, tt := range tests {
		b := newBook(t0, 3*time.Minute)
		b.add(t0.Add(tt.at), tt.o)
		ms := b.minutes()
		if len(ms) != tt.minute+1 {
			t.Errorf("%s: booked in minute %d, want %d", tt.name, len(ms)-1, tt.minute)
			continue
		}
		m := ms[tt.minute]
		if m.ServerErr != tt.serverErr || m.Unanswered != tt.unanswered || m.Cut != tt.cut || m.Requests != 1 {
			t.Errorf("%s: %+v, want %d server errors, %d unanswered, %d cut", tt.name, m, tt.serverErr, tt.unanswered, tt.cut)
		}
		if tt.cause != "" && m.Causes[tt.cause] != 1 {
			t.Errorf("%s: causes %v, want %q", tt.name, m.Causes, tt.cause)
		}
	}
}
