package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
)

// envOf is a getenv over a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// configErrorCases are environments loadConfig must refuse, with what the
// error must name: the variable and, for a malformed value, the value.
var configErrorCases = []struct {
	name      string
	env       map[string]string
	wantVar   string
	wantValue string
}{
	{"unknown cache mode", map[string]string{"CACHE_MODE": "bogus"}, "CACHE_MODE", "bogus"},
	{"unknown L1 invalidation", map[string]string{"L1_INVALIDATION": "gossip"}, "L1_INVALIDATION", "gossip"},
	{"zero instances", map[string]string{"EXPECTED_INSTANCES": "0"}, "EXPECTED_INSTANCES", "0"},
	{"negative headroom", map[string]string{"DB_CONNS_HEADROOM": "-1"}, "DB_CONNS_HEADROOM", "-1"},
	{"strict sizing not a bool", map[string]string{"STRICT_POOL_SIZING": "maybe"}, "STRICT_POOL_SIZING", "maybe"},
	{"http cache not a bool", map[string]string{"HTTP_CACHE": "sometimes"}, "HTTP_CACHE", "sometimes"},
	{"max-age not a duration", map[string]string{"HTTP_MAX_AGE": "30"}, "HTTP_MAX_AGE", "30"},
	{"negative stale-if-error", map[string]string{"HTTP_STALE_IF_ERROR": "-1m"}, "HTTP_STALE_IF_ERROR", "-1m"},
	{"duration not a duration", map[string]string{"LOCK_TTL": "abc"}, "LOCK_TTL", "abc"},
	{"negative duration", map[string]string{"LOCK_TTL": "-1s"}, "LOCK_TTL", "-1s"},
	{"negative pool size", map[string]string{"DB_MAIN_MAX_CONNS": "-3"}, "DB_MAIN_MAX_CONNS", "-3"},
	{"pool size not a number", map[string]string{"DB_MAIN_MAX_CONNS": "x"}, "DB_MAIN_MAX_CONNS", `"x"`},
	{"proxy not a CIDR", map[string]string{"TRUSTED_PROXIES": "not-a-cidr"}, "TRUSTED_PROXIES", "not-a-cidr"},
	{"rate limit not a rate", map[string]string{"RATE_LIMIT": "lots"}, "RATE_LIMIT", "lots"},
	{"hot key not an id", map[string]string{"HOT_KEYS": "1,x"}, "HOT_KEYS", `"x"`},
	{"xfetch beta zero", map[string]string{"XFETCH_BETA": "0"}, "XFETCH_BETA", `"0"`},
	{"statement outlives lock", map[string]string{"DB_STATEMENT_TIMEOUT": "10s", "LOCK_TTL": "5s"}, "DB_STATEMENT_TIMEOUT", ""},
	{"request shorter than acquire+statement", map[string]string{"REQUEST_TIMEOUT": "1s"}, "REQUEST_TIMEOUT", ""},
	{"lock wait outlives request", map[string]string{"LOCK_WAIT": "10s"}, "LOCK_WAIT", ""},
	{"soft TTL beyond hard TTL", map[string]string{"CACHE_SOFT_TTL": "20m"}, "CACHE_SOFT_TTL", ""},
	{"static key not an id", map[string]string{"STATIC_KEYS": "7,seven"}, "STATIC_KEYS", `"seven"`},
	{"static keys repaired less often than they expire", map[string]string{"STATIC_TTL": "1m", "STATIC_REPAIR_PERIOD": "1m"}, "STATIC_REPAIR_PERIOD", ""},
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range configErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(envOf(tc.env))
			if err == nil {
				t.Fatalf("loadConfig(%v): got nil error, want one naming %s", tc.env, tc.wantVar)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantVar) {
				t.Errorf("error %q: got no %s, want the variable named", msg, tc.wantVar)
			}
			if !strings.Contains(msg, tc.wantValue) {
				t.Errorf("error %q: got no %s, want the bad value", msg, tc.wantValue)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error %q: got several lines, want one", msg)
			}
		})
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(envOf(nil))
	if err != nil {
		t.Fatalf("loadConfig with no variables: got %v, want nil", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"HTTP_ADDR", c.HTTPAddr, ":8080"},
		{"CACHE_MODE", c.CacheMode, cache.ModeSWR},
		{"L1_TTL", c.L1TTL, time.Second},
		{"RATE_LIMIT", c.RateLimit, "100-S"},
		{"DB_MAIN_MAX_CONNS", c.MainMaxConns, 20},
		{"TRUSTED_PROXIES", len(c.TrustedProxies), 0},
		{"HOT_KEYS", len(c.HotKeys), 0},
		{"L1_INVALIDATION", c.L1Tracking, false},
		{"EXPECTED_INSTANCES", c.ExpectedInstances, 1},
		{"DB_CONNS_HEADROOM", c.PoolHeadroom, 10},
		{"STRICT_POOL_SIZING", c.StrictPoolSizing, false},
		{"HTTP_CACHE", c.HTTPCache.Enabled, true},
		{"HTTP_MAX_AGE", c.HTTPCache.MaxAge, 30 * time.Second},
		{"HTTP_STALE_WHILE_REVALIDATE", c.HTTPCache.StaleWhileRevalidate, 570 * time.Second},
		{"HTTP_STALE_IF_ERROR", c.HTTPCache.StaleIfError, 10 * time.Minute},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if c, err := loadConfig(envOf(map[string]string{"L1_TTL": "0", "HOT_KEYS": " 1, 42 "})); err != nil || c.L1TTL != 0 || len(c.HotKeys) != 2 {
		t.Errorf("L1_TTL=0, HOT_KEYS=\" 1, 42 \": got L1 %v, hot keys %v, err %v; want 0, [1 42], nil", c.L1TTL, c.HotKeys, err)
	}
}

// TestRunConfigErrorStopsBeforeDatabase: run with a bad environment returns
// loadConfig's error at once, before it dials the (unreachable) database.
func TestRunConfigErrorStopsBeforeDatabase(t *testing.T) {
	for _, tc := range configErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}
			for k, v := range tc.env {
				env[k] = v
			}
			_, want := loadConfig(envOf(env))
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := run(ctx, envOf(env), &out)
			if took := time.Since(start); took > time.Second {
				t.Errorf("run took %s, want under 1s", took)
			}
			if err == nil || want == nil || err.Error() != want.Error() {
				t.Fatalf("run: got error %v, want %v", err, want)
			}
			if out.Len() != 0 {
				t.Errorf("run logged %q, want nothing (it must stop before starting anything)", out.String())
			}
		})
	}
}
