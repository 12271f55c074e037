package client

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoffCapDoublesUpToMax(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	tests := []struct {
		retry int
		want  time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{60, time.Second}, // no overflow however many retries
	}
	for _, tt := range tests {
		if got := p.backoffCap(tt.retry); got != tt.want {
			t.Errorf("backoffCap(%d) = %s, want %s", tt.retry, got, tt.want)
		}
	}
}

// TestDelayIsFullJitter checks the wait spans the whole window [0, cap):
// the smallest draw waits nothing (or exactly Retry-After), the largest
// just under the cap (on top of Retry-After).
func TestDelayIsFullJitter(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	lowest := func(int64) int64 { return 0 }
	highest := func(n int64) int64 { return n - 1 }
	var asked []int64
	record := func(n int64) int64 { asked = append(asked, n); return n / 2 }
	tests := []struct {
		name       string
		retry      int
		retryAfter time.Duration
		rnd        func(int64) int64
		want       time.Duration
	}{
		{"lowest draw, no Retry-After", 2, 0, lowest, 0},
		{"highest draw, no Retry-After", 2, 0, highest, 200*time.Millisecond - 1},
		{"lowest draw waits exactly Retry-After", 1, 3 * time.Second, lowest, 3 * time.Second},
		{"highest draw adds the jitter window to Retry-After", 1, 3 * time.Second, highest, 3*time.Second + 100*time.Millisecond - 1},
		{"draw is taken from the capped window", 9, 0, record, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.delay(tt.retry, tt.retryAfter, tt.rnd); got != tt.want {
				t.Errorf("delay = %s, want %s", got, tt.want)
			}
		})
	}
	if len(asked) != 1 || asked[0] != int64(time.Second) {
		t.Errorf("random source asked for %v, want [1s]: the window must be capped at MaxDelay", asked)
	}
}

// TestDelayJitterSpreads checks the real random source spreads a fleet
// over the window instead of one point.
func TestDelayJitterSpreads(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Second}.withDefaults()
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := p.delay(1, 0, randN)
		if d < 0 || d >= time.Second {
			t.Fatalf("delay %s outside [0, 1s)", d)
		}
		seen[d/(100*time.Millisecond)] = true
	}
	if len(seen) != 10 {
		t.Errorf("1000 draws fell in %d of the ten 100 ms buckets, want all ten", len(seen))
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second, true},
		{"Tue, 01 Dec 2026 04:00:30 GMT", 30 * time.Second, true},
		{"Tuesday, 01-Dec-26 04:00:30 GMT", 30 * time.Second, true}, // RFC 850, still legal to receive
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},    // in the past: go now
		{"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	tests := []struct {
		status               int
		idempotent, nonIdemp bool
	}{
		{200, false, false},
		{400, false, false},
		{401, false, false},
		{404, false, false},
		{408, true, true},
		{409, false, false},
		{412, false, false},
		{413, false, false},
		{422, false, false},
		{429, true, true},
		{500, false, false},
		{502, true, false},
		{503, true, true},
		{504, true, false},
	}
	for _, tt := range tests {
		if got := retryableStatus(tt.status, true); got != tt.idempotent {
			t.Errorf("retryableStatus(%d, idempotent) = %v, want %v", tt.status, got, tt.idempotent)
		}
		if got := retryableStatus(tt.status, false); got != tt.nonIdemp {
			t.Errorf("retryableStatus(%d, not idempotent) = %v, want %v", tt.status, got, tt.nonIdemp)
		}
	}
}
