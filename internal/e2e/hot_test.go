package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

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
