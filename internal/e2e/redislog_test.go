package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestGoRedisLogsAreJSON: a line go-redis itself logs (here: a TTL under
// its 1 ms resolution, which it truncates and reports) comes out of the app
// as a JSON record at warn level. Not parallel: go-redis's logger is one
// per process, and the app started last owns it.
func TestGoRedisLogsAreJSON(t *testing.T) {
	env := testEnv(t)
	a := launchApp(t, env)
	a.waitListening()

	rdb := dbtest.NewRedis(t, redisDB)
	key := nsKey(env, "redislog")
	if err := rdb.Set(context.Background(), key, "x", 500*time.Microsecond).Err(); err != nil {
		t.Fatalf("SET with a sub-millisecond TTL: %v", err)
	}
	var found bool
	for _, line := range strings.Split(a.logs.String(), "\n") {
		if strings.Contains(line, "truncating to 1ms") {
			found = true
			rec := decodeObject(t, []byte(line))
			if rec["level"] != "WARN" || rec["logger"] != "go-redis" {
				t.Errorf("go-redis line %s: want level WARN and logger go-redis", line)
			}
		}
	}
	if !found {
		t.Errorf("go-redis's truncation warning is not in the app's log:\n%s", a.logs)
	}
}
