package config

import (
	"strings"
	"testing"
	"time"
)

// TestTimeBudgetDerivesFromWhatIsSet: a value the user never set follows the
// ones they did, so changing one timeout never trips over a default.
func TestTimeBudgetDerivesFromWhatIsSet(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	cases := []struct {
		name string
		env  map[string]string
		// want: request, acquire, statement, lock TTL, lock wait, write
		want [6]time.Duration
	}{
		{"defaults", nil, [6]time.Duration{10 * s, 2 * s, 3 * s, 4 * s, 9 * s, 15 * s}},
		{"request 5s", map[string]string{"REQUEST_TIMEOUT": "5s"}, [6]time.Duration{5 * s, 1 * s, 1500 * ms, 2 * s, 4500 * ms, 7500 * ms}},
		{"request 15s", map[string]string{"REQUEST_TIMEOUT": "15s"}, [6]time.Duration{15 * s, 3 * s, 4500 * ms, 6 * s, 13500 * ms, 22500 * ms}},
		{"statement 6s grows the request", map[string]string{"DB_STATEMENT_TIMEOUT": "6s"}, [6]time.Duration{20 * s, 4 * s, 6 * s, 8 * s, 18 * s, 30 * s}},
		{"short lock TTL shrinks the statement", map[string]string{"LOCK_TTL": "2s"}, [6]time.Duration{10 * s, 2 * s, 1500 * ms, 2 * s, 9 * s, 15 * s}},
		{"write timeout caps the request", map[string]string{"HTTP_WRITE_TIMEOUT": "6s"}, [6]time.Duration{4 * s, 800 * ms, 1200 * ms, 1600 * ms, 3600 * ms, 6 * s}},
		// An answer needs time to be written once its handler is done, on
		// a loaded host too: half of a 50 ms deadline was 25 ms, and the
		// server cut answers it still wrote.
		{"short request keeps a second to write", map[string]string{"REQUEST_TIMEOUT": "50ms"}, [6]time.Duration{50 * ms, 10 * ms, 15 * ms, 20 * ms, 45 * ms, 1050 * ms}},
		{"request 1s", map[string]string{"REQUEST_TIMEOUT": "1s"}, [6]time.Duration{1 * s, 200 * ms, 300 * ms, 400 * ms, 900 * ms, 2 * s}},
		{"request 2s: half of it is the margin", map[string]string{"REQUEST_TIMEOUT": "2s"}, [6]time.Duration{2 * s, 400 * ms, 600 * ms, 800 * ms, 1800 * ms, 3 * s}},
		{"statement set with request", map[string]string{"REQUEST_TIMEOUT": "8s", "DB_STATEMENT_TIMEOUT": "1900ms", "LOCK_TTL": "2s", "LOCK_WAIT": "6s"},
			[6]time.Duration{8 * s, 1600 * ms, 1900 * ms, 2 * s, 6 * s, 12 * s}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(envOf(tc.env))
			if err != nil {
				t.Fatalf("Load(%v): %v", tc.env, err)
			}
			got := [6]time.Duration{c.RequestTimeout, c.AcquireTimeout, c.StmtTimeout, c.LockTTL, c.LockWait, c.WriteTimeout}
			if got != tc.want {
				t.Errorf("request, acquire, statement, lock TTL, lock wait, write:\n got %v\nwant %v", got, tc.want)
			}
			if c.LoadTimeout != c.AcquireTimeout+c.StmtTimeout {
				t.Errorf("load deadline %v, want acquire + statement %v", c.LoadTimeout, c.AcquireTimeout+c.StmtTimeout)
			}
		})
	}
}

// TestTimeBudgetDefaultsCoverDeadHolder: on every derived budget a waiter
// outlives a dead holder's lock plus one takeover load, inside its request.
func TestTimeBudgetDefaultsCoverDeadHolder(t *testing.T) {
	for _, r := range []string{"", "1s", "5s", "10s", "30s", "2m"} {
		c, err := Load(envOf(map[string]string{"REQUEST_TIMEOUT": r}))
		if err != nil {
			t.Fatalf("REQUEST_TIMEOUT=%q: %v", r, err)
		}
		if !c.LockCoversDeadHolder || c.LockWait < c.LockTTL+c.LoadTimeout || c.LockWait >= c.RequestTimeout {
			t.Errorf("REQUEST_TIMEOUT=%q: lock wait %v, lock TTL %v, load %v, request %v: want TTL + load ≤ wait < request",
				r, c.LockWait, c.LockTTL, c.LoadTimeout, c.RequestTimeout)
		}
	}
}

// TestConfigReportsEveryMistake: all mistakes at once, each line naming both
// sides of a broken rule and whether each was set or derived.
func TestConfigReportsEveryMistake(t *testing.T) {
	_, err := Load(envOf(map[string]string{
		"CACHE_MODE": "bogus", "REQUEST_TIMEOUT": "10s", "HTTP_WRITE_TIMEOUT": "5s", "LOCK_TTL": "1s", "DB_STATEMENT_TIMEOUT": "2s",
	}))
	if err == nil {
		t.Fatal("got nil error, want three")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"CACHE_MODE", "DB_STATEMENT_TIMEOUT=2s (set) must be shorter than LOCK_TTL=1s (set)", "REQUEST_TIMEOUT=10s (set) must be shorter than HTTP_WRITE_TIMEOUT=5s (set)"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%s", w, err)
		}
	}
}
