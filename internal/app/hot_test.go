package app

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/config"
)

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
		{"not below the soft TTL", map[string]string{"HOT_KEY_L1_TTL": "30s"}, 0, "HOT_KEY_L1_TTL"},
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

// TestReplicaReadsClient: REDIS_REPLICA_READS builds a second cluster
// client that may read from replicas, picked at random (not by latency,
// go-redis issue #3023); none without the setting or on one server.
func TestReplicaReadsClient(t *testing.T) {
	t.Parallel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = cc.Close() })
	on := config.Config{RedisClusterAddrs: []string{"127.0.0.1:1"}, HotKey: config.HotKeySettings{ReplicaReads: true}}
	rc := newReplicaReads(on, cc, nil)
	if rc == nil {
		t.Fatal("REDIS_REPLICA_READS on a cluster: got no client")
	}
	t.Cleanup(func() { _ = rc.Close() })
	if o := rc.Options(); !o.ReadOnly || !o.RouteRandomly || o.RouteByLatency {
		t.Errorf("replica client: ReadOnly %v RouteRandomly %v RouteByLatency %v, want true true false", o.ReadOnly, o.RouteRandomly, o.RouteByLatency)
	}
	if o := cc.Options(); o.ReadOnly {
		t.Error("the main client became ReadOnly: every read (locks' double-check too) could hit a lagging replica")
	}
	if got := newReplicaReads(config.Config{HotKey: config.HotKeySettings{}}, cc, nil); got != nil {
		t.Error("without REDIS_REPLICA_READS: got a client, want none")
	}
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = single.Close() })
	if got := newReplicaReads(on, single, nil); got != nil {
		t.Error("on one server: got a client, want none")
	}
}
