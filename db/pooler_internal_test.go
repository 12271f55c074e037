package db

import (
	"testing"
	"time"
)

func TestParsePGDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"250ms", 250 * time.Millisecond, true}, {"3s", 3 * time.Second, true},
		{"1min", time.Minute, true}, {"2h", 2 * time.Hour, true}, {"1d", 24 * time.Hour, true},
		{"1500", 1500 * time.Millisecond, true}, {"3 weeks", 0, false}, {"", 0, false},
	}
	for _, tc := range tests {
		got, err := parsePGDuration("statement_timeout", tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parsePGDuration(%q): got %s, %v, want %s, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParsePooler(t *testing.T) {
	for in, want := range map[string]Pooler{"": PoolerNone, "none": PoolerNone, "pgbouncer": PoolerPgBouncer, "pgbouncer-prepared": PoolerPgBouncerPrepared} {
		if got, err := parsePooler(in); err != nil || got != want {
			t.Errorf("parsePooler(%q): got %q, %v, want %q", in, got, err, want)
		}
	}
	if _, err := parsePooler("odyssey"); err == nil {
		t.Error(`parsePooler("odyssey"): got nil error`)
	}
}
