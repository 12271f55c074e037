package e2e

import "testing"

// The warnings a start logs for settings that are allowed but weaken a
// protection. Each is a WARN line a user reads once, at start: the test
// holds who gets it, and who must not (a warning on defaults is noise that
// teaches users to ignore the next one).
const (
	warnLockWait = "LOCK_WAIT ends before a dead holder's LOCK_TTL plus one load: waiters give up early (LOCK_WAITER decides what they answer)"
	warnCopies   = "HOT_KEY_COPIES > 1 without REDIS_CLUSTER_ADDRS: the copies share one Redis server and spread no reads"
	// An INFO, not a WARN: nothing is wrong, only dearer when another app
	// shares the server.
	infoTracking = "L1_INVALIDATION=tracking without CACHE_NAMESPACE: a change to a product key in any logical database of this Redis server drops this app's L1 copy of that key (a reload, never a stale answer); set CACHE_NAMESPACE to keep apps on one server apart"
)

// TestStartWarnings: each case starts the app with one change and checks
// which warnings its start logged.
func TestStartWarnings(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want map[string]bool // warning → logged
	}{
		{"defaults", nil, map[string]bool{warnLockWait: false, warnCopies: false, infoTracking: false}},
		// Set together, a long statement leaves the derived lock wait
		// (0.9 × 10 s) short of the lock TTL plus one load (6 s + 7 s).
		{"request and statement set", map[string]string{"REQUEST_TIMEOUT": "10s", "DB_STATEMENT_TIMEOUT": "5s"}, map[string]bool{warnLockWait: true}},
		// Set alone, a long lock TTL grows the derived request deadline,
		// and the lock wait with it: nothing to warn about.
		{"lock TTL alone", map[string]string{"LOCK_TTL": "20s"}, map[string]bool{warnLockWait: false}},
		{"copies on one server", map[string]string{"HOT_KEY_COPIES": "3"}, map[string]bool{warnCopies: true, warnLockWait: false}},
		{"tracking with a namespace", map[string]string{"L1_INVALIDATION": "tracking", "L1_TTL": "1s"}, map[string]bool{infoTracking: false}},
		{"tracking without a namespace", map[string]string{"L1_INVALIDATION": "tracking", "L1_TTL": "1s", "CACHE_NAMESPACE": ""}, map[string]bool{infoTracking: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := launchApp(t, testEnv(t, tc.env))
			a.waitListening()
			if err := a.stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			for msg, want := range tc.want {
				if got := len(a.logs.records(msg)) > 0; got != want {
					t.Errorf("warning %q logged: %v, want %v", msg, got, want)
				}
			}
		})
	}
}
