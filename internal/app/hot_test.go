package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
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

// TestHotKeyDetectedEndToEnd: the binary finds a product read tens of
// times a second hot (threshold 5/s), writes its copies, and lists it with
// its rate in the console feed and in /metrics; a product read once is not
// hot.
func TestHotKeyDetectedEndToEnd(t *testing.T) {
	env := testEnv(t)
	env["HOT_KEY_THRESHOLD"] = "5" // far below what the loop reads, even on a busy machine
	env["HOT_KEY_COPIES"] = "3"
	a := launchApp(t, env)
	base := a.waitListening()
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	feed := fmt.Sprintf("http://%s/api/state", admin[0]["addr"])
	hotKey, coldKey := "product:v1:{7}", "product:v1:{8}"
	if resp, body := call(t, "GET", base+"/products/8", nil, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /products/8: got %d %s, want 200", resp.StatusCode, body)
	}

	var listed map[string]any
	deadline := time.Now().Add(15 * time.Second)
	for listed == nil && time.Now().Before(deadline) {
		for range 10 {
			if resp, body := call(t, "GET", base+"/products/7", nil, ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /products/7: got %d %s, want 200", resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		resp, body, err := send("GET", feed, nil, "")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", feed, resp, err)
		}
		var st struct {
			HotKeys []map[string]any `json:"hot_keys"`
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("decode state: %v", err)
		}
		for _, r := range st.HotKeys {
			if r["key"] == coldKey && r["hot"] == true {
				t.Errorf("console: %s read once is listed hot: %v", coldKey, r)
			}
			if r["key"] == hotKey && r["hot"] == true {
				listed = r
			}
		}
	}
	if listed == nil {
		t.Fatalf("console feed: %s never listed hot within 15 s", hotKey)
	}
	if rate, _ := listed["per_second"].(float64); rate <= 0 {
		t.Errorf("console: %s listed at %v reads/s, want > 0", hotKey, listed["per_second"])
	}
	m := scrape(t, base)
	if got := m["stampede_hot_keys"]; got != 1 {
		t.Errorf("stampede_hot_keys: got %v, want 1", got)
	}
	if _, ok := m[fmt.Sprintf(`stampede_hot_key_reads_per_second{hot="true",key=%q}`, hotKey)]; !ok {
		t.Errorf("no stampede_hot_key_reads_per_second series for %s", hotKey)
	}

	// Promoted: its copies are written from the entry by the next reads.
	rdb := dbtest.NewRedis(t, redisDB)
	pattern := nsKey(env, "product:v1:{7#*}")
	var copies []string
	for deadline := time.Now().Add(5 * time.Second); len(copies) < 2 && time.Now().Before(deadline); {
		call(t, "GET", base+"/products/7", nil, "")
		copies = rdb.Keys(context.Background(), pattern).Val()
		time.Sleep(20 * time.Millisecond)
	}
	if len(copies) != 2 {
		t.Errorf("copies of the hot key: got %q, want 2", copies)
	}
	if n := len(rdb.Keys(context.Background(), nsKey(env, "product:v1:{8#*}")).Val()); n != 0 {
		t.Errorf("copies of the cold key: got %d, want 0", n)
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
