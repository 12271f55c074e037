package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestAdminStateListsLockHolders: the console's feed shows a held lock with
// its remaining TTL, and nothing once it is gone.
func TestAdminStateListsLockHolders(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	a := launchApp(t, env)
	a.waitListening()
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	feed := fmt.Sprintf("http://%s/api/state", admin[0]["addr"])
	rdb := dbtest.NewRedis(t, redisDB)
	key := nsKey(env, "lock:product:v1:{"+dbtest.Unique()+"}")
	if err := rdb.Set(context.Background(), key, "token", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	ttl, found := lockTTL(t, feed, key)
	if !found || ttl <= 0 || ttl > 20_000 {
		t.Fatalf("lock %s in the feed: found %v, ttl %d ms; want found, 0 < ttl ≤ 20000", key, found, ttl)
	}
	rdb.Del(context.Background(), key)
	if _, found := lockTTL(t, feed, key); found {
		t.Errorf("released lock %s still listed", key)
	}
}

func lockTTL(t *testing.T, feed, key string) (int64, bool) {
	t.Helper()
	resp, body, err := send("GET", feed, nil, "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v, %v", feed, resp, err)
	}
	var st struct {
		Locks []struct {
			Key   string `json:"key"`
			TTLMs int64  `json:"ttl_ms"`
		} `json:"locks"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("decode state: %v", err)
	}
	for _, l := range st.Locks {
		if l.Key == key {
			return l.TTLMs, true
		}
	}
	return 0, false
}
