package config

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// followCases are single settings a user changes alone, and what the
// settings they left unset must become: each was refused at start, or
// started contradicting the set value, before its rule followed it.
var followCases = []struct {
	name  string
	env   map[string]string
	check func(Config) error
}{
	{"STATIC_REPAIR_PERIOD=48h: the TTL outlasts two repairs", map[string]string{"STATIC_REPAIR_PERIOD": "48h"}, func(c Config) error {
		return want("STATIC_TTL", c.StaticTTL, 96*time.Hour)
	}},
	{"HOT_KEY_L1_TTL=40s: the soft TTL rises past it", map[string]string{"HOT_KEY_L1_TTL": "40s"}, func(c Config) error {
		return want("CACHE_SOFT_TTL", c.CacheSoftTTL, 80*time.Second)
	}},
	{"HOT_KEY_L1_TTL=100ms: L1_TTL comes down to it", map[string]string{"HOT_KEY_L1_TTL": "100ms"}, func(c Config) error {
		return want("L1_TTL", c.L1TTL, 100*time.Millisecond)
	}},
	{"STATIC_TTL=1m: repairs twice per TTL", map[string]string{"STATIC_TTL": "1m"}, func(c Config) error {
		return want("STATIC_REPAIR_PERIOD", c.StaticRepair, 30*time.Second)
	}},
	{"BREAKER_OPEN_MIN=1m: the cap rises to it", map[string]string{"BREAKER_OPEN_MIN": "1m"}, func(c Config) error {
		return want("BREAKER_OPEN_MAX", c.BreakerOpenMax, time.Minute)
	}},
	{"BREAKER_OPEN_MAX=100ms: the minimum comes down to it", map[string]string{"BREAKER_OPEN_MAX": "100ms"}, func(c Config) error {
		return want("BREAKER_OPEN_MIN", c.BreakerOpenMin, 100*time.Millisecond)
	}},
	{"BODY_READ_TIMEOUT=10s: the request grows to twice it", map[string]string{"BODY_READ_TIMEOUT": "10s"}, func(c Config) error {
		return want("REQUEST_TIMEOUT", c.RequestTimeout, 20*time.Second)
	}},
	{"LOCK_TTL=20s: the request grows to keep the lock's 0.4 share", map[string]string{"LOCK_TTL": "20s"}, func(c Config) error {
		if !c.LockCoversDeadHolder {
			return fmt.Errorf("lock wait %v does not cover lock TTL %v + load %v", c.LockWait, c.LockTTL, c.LoadTimeout)
		}
		return want("REQUEST_TIMEOUT", c.RequestTimeout, 50*time.Second)
	}},
	{"HTTP_WRITE_TIMEOUT=2s: the request shrinks to whole milliseconds", map[string]string{"HTTP_WRITE_TIMEOUT": "2s"}, func(c Config) error {
		return want("REQUEST_TIMEOUT", c.RequestTimeout, 1333*time.Millisecond)
	}},
	{"CACHE_TTL=10s: a 404 is kept no longer than a product", map[string]string{"CACHE_TTL": "10s"}, func(c Config) error {
		return want("CACHE_NEGATIVE_TTL", c.CacheNegTTL, 10*time.Second)
	}},
	{"REQUEST_TIMEOUT=30s: shutdown waits for a request's deadline", map[string]string{"REQUEST_TIMEOUT": "30s"}, func(c Config) error {
		return want("SHUTDOWN_TIMEOUT", c.ShutdownTimeout, 30*time.Second)
	}},
	{"CACHE_TTL=30s with HOT_KEY_L1_TTL=20s: the soft TTL fits between them", map[string]string{"CACHE_TTL": "30s", "HOT_KEY_L1_TTL": "20s"}, func(c Config) error {
		return want("CACHE_SOFT_TTL", c.CacheSoftTTL, 25*time.Second)
	}},
	{"CACHE_TTL=30s with HOT_KEY_L1_TTL=20s and L1_TTL=2s: the soft TTL fits above the hot key's", map[string]string{"CACHE_TTL": "30s", "HOT_KEY_L1_TTL": "20s", "L1_TTL": "2s"}, func(c Config) error {
		return want("CACHE_SOFT_TTL", c.CacheSoftTTL, 25*time.Second)
	}},
	{"CACHE_TTL=20s with L1_TTL=15s: the soft TTL fits between them", map[string]string{"CACHE_TTL": "20s", "L1_TTL": "15s"}, func(c Config) error {
		return want("CACHE_SOFT_TTL", c.CacheSoftTTL, 17500*time.Millisecond)
	}},
	{"HTTP_MAX_AGE=60s: capped at the soft TTL a copy cannot outlive", map[string]string{"HTTP_MAX_AGE": "60s"}, func(c Config) error {
		if c.HTTPMaxAgeAsked != time.Minute {
			return fmt.Errorf("HTTPMaxAgeAsked %v, want 1m (logged at start)", c.HTTPMaxAgeAsked)
		}
		return want("max-age", c.HTTPCache.MaxAge, 30*time.Second)
	}},
	{"HTTP_MAX_AGE=60s in lock mode: capped at CACHE_TTL", map[string]string{"HTTP_MAX_AGE": "60s", "CACHE_MODE": "lock", "CACHE_TTL": "30s"}, func(c Config) error {
		return want("max-age", c.HTTPCache.MaxAge, 30*time.Second)
	}},
	{"HTTP_MAX_AGE=0: a 404 is not fresher than a product", map[string]string{"HTTP_MAX_AGE": "0"}, func(c Config) error {
		return want("404 max-age", c.HTTPCache.NotFoundMaxAge, 0)
	}},
	{"DB_MAIN_MAX_CONNS=1: nothing reserved that the pool cannot give", map[string]string{"DB_MAIN_MAX_CONNS": "1"}, func(c Config) error {
		return want("DB_CHECKOUT_RESERVED", time.Duration(c.CheckoutReserved), 0)
	}},
	{"RATE_LIMIT=100000-S: an API key keeps ten times an address", map[string]string{"RATE_LIMIT": "100000-S"}, func(c Config) error {
		return wantString("RATE_LIMIT_KEY", c.RateLimitKey, "1000000-S")
	}},
	{"RATE_LIMIT=30-M: the key limit keeps its period", map[string]string{"RATE_LIMIT": "30-M"}, func(c Config) error {
		return wantString("RATE_LIMIT_KEY", c.RateLimitKey, "300-M")
	}},
	{"RATE_LIMIT=off: keys unlimited too", map[string]string{"RATE_LIMIT": "off"}, func(c Config) error {
		return wantString("RATE_LIMIT_KEY", c.RateLimitKey, "off")
	}},
}

func want(name string, got, want time.Duration) error {
	if got != want {
		return fmt.Errorf("%s = %v, want %v", name, got, want)
	}
	return nil
}

func wantString(name, got, want string) error {
	if got != want {
		return fmt.Errorf("%s = %q, want %q", name, got, want)
	}
	return nil
}

// TestUnsetSettingsFollowSetOnes: one setting changed alone starts, and the
// settings left unset follow it.
func TestUnsetSettingsFollowSetOnes(t *testing.T) {
	for _, tc := range followCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(envOf(tc.env))
			if err != nil {
				t.Fatalf("Load(%v): %v", tc.env, err)
			}
			if err := tc.check(c); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestEnvExamplePinsNothingThatFollows: compose loads .env.example, then
// the user's .env, so a derived setting written out there would count as
// set and stop following (CACHE_SOFT_TTL=20m in .env was refused against
// the file's CACHE_TTL=10m). With the file under each change, Load must
// give what the change alone gives.
func TestEnvExamplePinsNothingThatFollows(t *testing.T) {
	example := readEnvExample(t)
	changes := []map[string]string{
		{"CACHE_SOFT_TTL": "20m"}, {"CACHE_SOFT_TTL": "500ms"}, {"L1_TTL": "1m"}, {"CACHE_TTL": "10s"},
		{"REQUEST_TIMEOUT": "30s"}, {"STATIC_TTL": "1m"}, {"BREAKER_OPEN_MIN": "1m"}, {"BREAKER_OPEN_MAX": "100ms"},
		{"RATE_LIMIT": "off"}, {"RATE_LIMIT": "5-S"}, {"LOCK_TTL": "20s"}, {"DB_STATEMENT_TIMEOUT": "20s"},
	}
	for _, tc := range followCases {
		changes = append(changes, tc.env)
	}
	for _, change := range changes {
		alone, err := Load(envOf(change))
		if err != nil {
			t.Errorf("%v alone: %v", change, err)
			continue
		}
		env := maps.Clone(example)
		maps.Copy(env, change)
		got, err := Load(envOf(env))
		if err != nil {
			t.Errorf("%v over .env.example: %v", change, err)
			continue
		}
		if diff := configDiff(got, alone); diff != "" {
			t.Errorf("%v over .env.example differs from it alone: %s", change, diff)
		}
	}
}

// TestDerivedRequestCoversDeadHolder: whatever inner timeouts are set,
// while REQUEST_TIMEOUT is derived a waiter outlives a dead holder's lock
// plus one takeover load (each set value keeps its share, and the shares
// of acquire, statement and lock TTL add up to the lock wait's 0.9).
func TestDerivedRequestCoversDeadHolder(t *testing.T) {
	for _, lockTTL := range []string{"", "700ms", "4s", "7s", "20s", "1m"} {
		for _, stmt := range []string{"", "1s", "3s", "6s", "15s"} {
			for _, acquire := range []string{"", "1s", "5s"} {
				env := map[string]string{"LOCK_TTL": lockTTL, "DB_STATEMENT_TIMEOUT": stmt, "DB_ACQUIRE_TIMEOUT": acquire}
				c, err := Load(envOf(env))
				if err != nil {
					if strings.Contains(err.Error(), "must be shorter than LOCK_TTL") {
						continue // a statement set at or past a set lock TTL: the user's to fix
					}
					t.Errorf("%v: %v", env, err)
					continue
				}
				if !c.LockCoversDeadHolder {
					t.Errorf("%v: lock wait %v < lock TTL %v + load %v (request %v)", env, c.LockWait, c.LockTTL, c.LoadTimeout, c.RequestTimeout)
				}
			}
		}
	}
}

// configDiff names the fields where got and want differ, or "".
func configDiff(got, want Config) string {
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	var diffs []string
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface()))
		}
	}
	return strings.Join(diffs, "; ")
}
