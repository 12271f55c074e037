package main

import (
	"strings"
	"testing"
	"time"
)

// TestSummarizeFailover: the window runs from the kill to the first 201 of
// an order sent after the kill; reads are classified by when they were
// sent; 500 and the other non-503 5xx are counted over every request.
func TestSummarizeFailover(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	killed, promoted := at(1000), at(2000)
	read := func(sent, status int) answer { return answer{sent: at(sent), done: at(sent + 5), status: status} }
	tests := []struct {
		name                   string
		reads, orders          []answer
		wantBack               bool
		wantKill, wantPromote  time.Duration
		want200, want503, want int // window reads: 200, 503, other
		want500, wantOther5xx  int
		wantCreatedAfter       int
	}{
		{
			name: "back after the promotion",
			reads: []answer{read(900, 200), read(1100, 200), read(1500, 503), read(1600, 0), read(2100, 200),
				read(2500, 200)},
			orders: []answer{
				{sent: at(800), done: at(1050), status: 201}, // sent before the kill: not the new primary's
				{sent: at(1200), done: at(1210), status: 503},
				{sent: at(2050), done: at(2200), status: 201},
				{sent: at(2300), done: at(2310), status: 500},
				{sent: at(2400), done: at(2410), status: 504},
			},
			wantBack: true, wantKill: 1200 * time.Millisecond, wantPromote: 200 * time.Millisecond,
			want200: 2, want503: 1, want: 1, want500: 1, wantOther5xx: 1, wantCreatedAfter: 1,
		},
		{
			name:     "a 201 before pg_ctl promote returned",
			reads:    []answer{read(1100, 200)},
			orders:   []answer{{sent: at(1500), done: at(1900), status: 201}},
			wantBack: true, wantKill: 900 * time.Millisecond, wantPromote: -100 * time.Millisecond,
			want200: 1,
		},
		{
			name:     "never back: the window is the rest of the run",
			reads:    []answer{read(1100, 200), read(5000, 503)},
			orders:   []answer{{sent: at(1500), done: at(1600), status: 503}},
			wantKill: -1, wantPromote: -1,
			want200: 1, want503: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &failoverLoad{reads: tt.reads, orders: tt.orders, keys: len(tt.orders)}
			s := summarizeFailover(f, killed, promoted, f.firstCreated(killed))
			if s.back != tt.wantBack || s.killToOrder != tt.wantKill || s.promoteToOrder != tt.wantPromote {
				t.Errorf("back %v, kill → order %s, promotion → order %s; want %v, %s, %s",
					s.back, s.killToOrder, s.promoteToOrder, tt.wantBack, tt.wantKill, tt.wantPromote)
			}
			if s.window200 != tt.want200 || s.window503 != tt.want503 || s.windowOther != tt.want {
				t.Errorf("window reads %d / %d / %d, want %d / %d / %d",
					s.window200, s.window503, s.windowOther, tt.want200, tt.want503, tt.want)
			}
			if s.status500 != tt.want500 || s.other5xx != tt.wantOther5xx || s.createdAfter != tt.wantCreatedAfter {
				t.Errorf("500 %d, other 5xx %d, created after the promotion %d; want %d, %d, %d",
					s.status500, s.other5xx, s.createdAfter, tt.want500, tt.wantOther5xx, tt.wantCreatedAfter)
			}
		})
	}
}

// TestFailoverSkipsWithoutBinaries: with no pg_ctl to be found the
// experiment says why instead of failing.
func TestFailoverSkipsWithoutBinaries(t *testing.T) {
	t.Setenv("PG_CTL", "/nonexistent/pg_ctl")
	if why := failoverSkip(); !strings.Contains(why, "pg_ctl") {
		t.Errorf("failoverSkip() = %q, want a reason naming pg_ctl", why)
	}
}
