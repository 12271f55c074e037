package app

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/config"
)

// What loadConfig accepts, derives and refuses for the settings the
// composition root reads across packages, and what run does with a
// refusal, and the GOGC default Main applies. internal/config tests each
// variable's parsing itself.

// TestRunConfigErrorStopsBeforeDatabase: run with a bad environment returns
// config.Load's error at once, before it dials the (unreachable) database
// or logs anything. internal/config tests each refusal itself.
func TestRunConfigErrorStopsBeforeDatabase(t *testing.T) {
	for _, bad := range []map[string]string{
		{"CACHE_MODE": "bogus"},
		{"REQUEST_TIMEOUT": "100ms", "DB_STATEMENT_TIMEOUT": "5s"},
		{"TRUSTED_PROXIES": "0.0.0.0/0"},
	} {
		env := map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}
		for k, v := range bad {
			env[k] = v
		}
		_, want := config.Load(envOf(env))
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, envOf(env), &out)
		cancel()
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Fatalf("run(%v): got error %v, want %v", bad, err, want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%v) logged %q, want nothing (it must stop before starting anything)", bad, out.String())
		}
	}
}

// TestPoolerConfigErrors: a pooler setting that cannot work stops the start
// with one line naming the variable.
func TestPoolerConfigErrors(t *testing.T) {
	tests := []struct {
		env     map[string]string
		wantVar string
	}{
		{map[string]string{"DB_POOLER": "odyssey"}, "DB_POOLER"},
		{map[string]string{"DB_POOLER": "pgbouncer"}, "DATABASE_DIRECT_URL"},
	}
	for _, tc := range tests {
		if _, err := loadConfig(envOf(tc.env)); err == nil || !strings.Contains(err.Error(), tc.wantVar) {
			t.Errorf("loadConfig(%v): got %v, want an error naming %s", tc.env, err, tc.wantVar)
		}
	}
}

func TestTracingOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, false},
	} {
		cfg, err := loadConfig(envOf(tc.env))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if got := cfg.Tracing.On(); got != tc.want {
			t.Errorf("%v: tracing on = %v, want %v", tc.env, got, tc.want)
		}
	}
	if _, err := loadConfig(envOf(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"})); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted; only otlp and none are supported")
	}
}

// TestClusterConfigErrors: a cluster setting that cannot work stops the
// start with one line naming the variable.
func TestClusterConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"seed without port", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1"}, "REDIS_CLUSTER_ADDRS"},
		{"seed port not a number", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000,10.0.0.2:x"}, "REDIS_CLUSTER_ADDRS"},
		{"tracking on a cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000", "L1_INVALIDATION": "tracking"}, "L1_INVALIDATION"},
		// A cluster has database 0 only: two apps "apart by database"
		// shared every key.
		{"a database other than 0 on a cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000", "REDIS_URL": "redis://127.0.0.1:6379/2"}, "REDIS_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(envOf(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.wantVar) {
				t.Fatalf("loadConfig(%v): got %v, want an error naming %s", tc.env, err, tc.wantVar)
			}
		})
	}
	cfg, err := loadConfig(envOf(map[string]string{"REDIS_CLUSTER_ADDRS": " 10.0.0.1:7000, [::1]:7001 ", "L1_INVALIDATION": "pubsub"}))
	if err != nil || len(cfg.RedisClusterAddrs) != 2 || cfg.RedisClusterAddrs[1] != "[::1]:7001" {
		t.Errorf("two seeds: got %q, %v, want both", cfg.RedisClusterAddrs, err)
	}
	// Tracking with the L1 off tracks nothing: no reason to refuse.
	if _, err := loadConfig(envOf(map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000", "L1_INVALIDATION": "tracking", "L1_TTL": "0"})); err != nil {
		t.Errorf("tracking with L1 off on a cluster: got %v, want nil", err)
	}
}

// TestHotKeyConfig: HOT_KEY_L1_TTL follows L1_TTL and the soft TTL by
// default, and is refused where it would hide a refresh or shorten L1.
func TestHotKeyConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantL1  time.Duration
		wantErr string
	}{
		{"defaults", map[string]string{}, 4 * time.Second, ""},
		{"capped at half the soft TTL", map[string]string{"L1_TTL": "2s", "CACHE_SOFT_TTL": "10s"}, 5 * time.Second, ""},
		{"L1 off", map[string]string{"L1_TTL": "0"}, 0, ""},
		{"set", map[string]string{"HOT_KEY_L1_TTL": "7s"}, 7 * time.Second, ""},
		{"not below a set soft TTL", map[string]string{"HOT_KEY_L1_TTL": "30s", "CACHE_SOFT_TTL": "30s"}, 0, "HOT_KEY_L1_TTL"},
		{"an unset soft TTL follows it", map[string]string{"HOT_KEY_L1_TTL": "30s"}, 30 * time.Second, ""},
		{"below L1_TTL", map[string]string{"L1_TTL": "2s", "HOT_KEY_L1_TTL": "1s"}, 0, "HOT_KEY_L1_TTL"},
		{"threshold not a number", map[string]string{"HOT_KEY_THRESHOLD": "lots"}, 0, "HOT_KEY_THRESHOLD"},
		{"top not positive", map[string]string{"HOT_KEY_TOP": "0"}, 0, "HOT_KEY_TOP"},
		{"detect not a bool", map[string]string{"HOT_KEY_DETECT": "perhaps"}, 0, "HOT_KEY_DETECT"},
		{"replica reads without a cluster", map[string]string{"REDIS_REPLICA_READS": "true"}, 0, "REDIS_REPLICA_READS"},
		{"replica reads on a cluster", map[string]string{"REDIS_REPLICA_READS": "true", "REDIS_CLUSTER_ADDRS": "127.0.0.1:7101"}, 4 * time.Second, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(envOf(tc.env))
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got err %v, want one naming %s", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("got err %v, want nil", err)
			case tc.wantErr == "" && c.HotKey.L1TTL != tc.wantL1:
				t.Errorf("HOT_KEY_L1_TTL: got %s, want %s", c.HotKey.L1TTL, tc.wantL1)
			}
		})
	}
}

// TestGCPercentDefault: the service's GOGC default applies only where the
// environment is silent; a GOGC the user set is left to the runtime.
func TestGCPercentDefault(t *testing.T) {
	tests := []struct {
		name string
		gogc string
		want int // the percentage in force afterwards
	}{
		{"unset: the service's default", "", defaultGCPercent},
		{"set: the runtime's reading of it stands", "50", 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Stand in for the runtime having read GOGC at start.
			prev := debug.SetGCPercent(50)
			t.Cleanup(func() { debug.SetGCPercent(prev) })
			setGCPercent(func(k string) string {
				if k == "GOGC" {
					return tt.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(50); got != tt.want {
				t.Errorf("GC percent %d, want %d", got, tt.want)
			}
		})
	}
}
