package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// line returns samples every 10 s from minute from to minute to of a
// figure that starts at v0 and grows by slope a minute, with spike added
// to every seventh sample (a sample taken mid-fault).
func line(from, to, v0, slope, spike float64) []point {
	var ps []point
	for i := 0; from+float64(i)/6 <= to+1e-9; i++ {
		t := from + float64(i)/6
		v := v0 + slope*(t-from)
		if i%7 == 3 {
			v += spike
		}
		ps = append(ps, point{t, v})
	}
	return ps
}

func TestTheilSen(t *testing.T) {
	tests := []struct {
		name string
		ps   []point
		want float64
	}{
		{"none", nil, 0},
		{"one", []point{{1, 5}}, 0},
		{"flat", line(0, 3, 60, 0, 0), 0},
		{"climbing 3/min", line(0, 3, 60, 3, 0), 3},
		{"flat with mid-fault spikes of +40", line(0, 3, 60, 0, 40), 0},
	}
	for _, tt := range tests {
		if got := theilSen(tt.ps); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: slope %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSoakVerdict: each rule fails the soak on its own, and a levelled
// run with 503s only passes. Remove a rule from verdict and its row goes
// red.
func TestSoakVerdict(t *testing.T) {
	levelled := func(v float64) []life { return []life{{Name: "instance 0", Points: line(0, 30, v, 0, 0)}} }
	ok := soakOutcome{Minutes: 30, RSS: levelled(65), Gor: levelled(40), FD: levelled(25)}
	tests := []struct {
		name   string
		change func(*soakOutcome)
		want   string // in the one failure; "" for a pass
	}{
		{"levelled, only 503s", func(*soakOutcome) {}, ""},
		{"a 500", func(o *soakOutcome) { o.ServerErrors = 1 }, "5xx other than 503"},
		{"an unanswered request", func(o *soakOutcome) { o.Unanswered = 1 }, "unanswered"},
		{"a lost order", func(o *soakOutcome) { o.Lost = 1 }, "not in PostgreSQL"},
		{"a duplicated order", func(o *soakOutcome) { o.Duplicated = 1 }, "more than one order"},
		{"RSS climbing 3 MiB/min", func(o *soakOutcome) {
			o.RSS = []life{{Name: "instance 1", Points: line(0, 30, 40, 3, 0)}}
		}, "RSS still climbing"},
		{"RSS climbing early, flat in the second half", func(o *soakOutcome) {
			o.RSS = []life{{Name: "instance 1", Points: append(line(0, 14.9, 30, 2.5, 0), line(15, 30, 65, 0.5, 8)...)}}
		}, ""},
		{"3-minute run: an instance restarted at 1.3 min warming up", func(o *soakOutcome) {
			o.Minutes = 3
			o.RSS = []life{{Name: "instance 0", Points: line(0, 3, 64, 0, 0)},
				{Name: "instance 1 (restart 1)", Points: append(line(1.33, 2.3, 35, 30, 0), line(2.33, 3, 65, 0, 0)...)}}
			o.Gor, o.FD = nil, nil
		}, ""},
		{"3-minute run: RSS stepping up 9 MiB with the last faults", func(o *soakOutcome) {
			o.Minutes = 3
			o.RSS = []life{{Name: "instance 0", Points: append(line(0, 1.4, 40, 17, 0), line(1.5, 3, 64, 6, 0)...)}}
			o.Gor, o.FD = nil, nil
		}, ""},
		{"3-minute run: RSS climbing 10 MiB/min", func(o *soakOutcome) {
			o.Minutes = 3
			o.RSS = []life{{Name: "instance 0", Points: line(0, 3, 40, 10, 0)}}
			o.Gor, o.FD = nil, nil
		}, "RSS still climbing"},
		{"goroutines leaking 2/min", func(o *soakOutcome) {
			o.Gor = []life{{Name: "instance 2", Points: line(0, 30, 40, 2, 0)}}
		}, "goroutines grew"},
		{"goroutines swinging with faults, not growing", func(o *soakOutcome) {
			o.Gor = []life{{Name: "instance 2", Points: line(0, 30, 40, 0, 300)}}
		}, ""},
		{"fds leaking 3/min", func(o *soakOutcome) {
			o.FD = []life{{Name: "instance 0", Points: line(0, 30, 25, 3, 0)}}
		}, "open fds grew"},
		{"no instance lived through the second half", func(o *soakOutcome) {
			o.RSS = []life{{Name: "instance 0", Points: line(0, 16, 60, 0, 0)}, {Name: "instance 0 (restart 1)", Points: line(28, 30, 40, 0, 0)}}
		}, "enough of the second half"},
	}
	for _, tt := range tests {
		o := ok
		tt.change(&o)
		fails := verdict(o)
		switch {
		case tt.want == "" && len(fails) > 0:
			t.Errorf("%s: failed: %v", tt.name, fails)
		case tt.want != "" && (len(fails) != 1 || !strings.Contains(fails[0], tt.want)):
			t.Errorf("%s: failures %q, want one saying %q", tt.name, fails, tt.want)
		}
	}
}

func TestCheckOrders(t *testing.T) {
	tests := []struct {
		name       string
		told, rows map[string][]int64
		want       orderCheck
	}{
		{"each 201 stored once, one replay", map[string][]int64{"a": {1, 1}, "b": {2}}, map[string][]int64{"a": {1}, "b": {2}},
			orderCheck{Keys: 2, Replays: 1}},
		{"a 201 with no row", map[string][]int64{"a": {1}}, map[string][]int64{}, orderCheck{Keys: 1, Lost: 1}},
		{"a 201 whose id is another key's", map[string][]int64{"a": {2}}, map[string][]int64{"a": {1}}, orderCheck{Keys: 1, Lost: 1}},
		{"a retry answered with a second id", map[string][]int64{"a": {1, 2}}, map[string][]int64{"a": {1, 2}},
			orderCheck{Keys: 1, Replays: 1, Duplicated: 1}},
		{"committed, client gave up", map[string][]int64{}, map[string][]int64{"a": {1}}, orderCheck{Unconfirmed: 1}},
		{"stored twice, never confirmed", map[string][]int64{}, map[string][]int64{"a": {1, 2}}, orderCheck{Unconfirmed: 1, Duplicated: 1}},
	}
	for _, tt := range tests {
		if got := checkOrders(tt.told, tt.rows, 0); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

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
		// A write whose COMMIT went unanswered says so: not a failure of
		// the service's (the orders check judges what it did); a read past
		// its deadline is.
		{"504 outcome unknown", 61 * time.Second, outcome{status: 504, body: `{"error":"the database did not confirm the write: it may or may not have been applied"}`, kind: "order", fault: "db connection resets"}, 1, 0, 0, 0,
			`504 "the database did not confirm the write: it may or may not have been applied" on order during db connection resets`},
		{"504 of a read", 61 * time.Second, outcome{status: 504, body: `{"error":"the request took too long"}`, kind: "hot"}, 1, 1, 0, 0, ""},
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
