package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPoolSizingAtStart starts the service with a fleet far larger than the
// real PostgreSQL's max_connections allows: by default it warns and serves,
// with STRICT_POOL_SIZING it refuses to start and says why.
func TestPoolSizingAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		instances string
		strict    string
		wantStart bool
		wantWarn  bool
	}{
		{"fits", "1", "true", true, false},
		{"oversized warns", "1000", "false", true, true},
		{"oversized strict refuses", "1000", "true", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t)
			env["EXPECTED_INSTANCES"] = tt.instances
			env["STRICT_POOL_SIZING"] = tt.strict
			a := launchApp(t, env)
			if !tt.wantStart {
				select {
				case <-a.exited:
				case <-time.After(listenWait):
					t.Fatalf("run still going after %s, want a refusal to start", listenWait)
				}
				a.early = true
				if a.err == nil || !strings.Contains(a.err.Error(), "max_connections") || !strings.Contains(a.err.Error(), "1000 instances") {
					t.Fatalf("run: got %v, want an error naming max_connections and 1000 instances", a.err)
				}
				return
			}
			a.waitListening()
			warned := len(a.logs.records("pool sizing: the pools do not fit PostgreSQL's max_connections; under full load some connects will fail with too many clients")) > 0
			if warned != tt.wantWarn {
				t.Errorf("sizing warning logged: %v, want %v", warned, tt.wantWarn)
			}
			if fits := len(a.logs.records("pool sizing")) > 0; fits == tt.wantWarn {
				t.Errorf("\"pool sizing\" info logged: %v, want %v", fits, !tt.wantWarn)
			}
		})
	}
}
