package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestRedisDownServesFromDatabase cuts the link to Redis under a running
// service: products are still answered from PostgreSQL, fast, and the rate
// limit still applies (per instance, from memory); when the link returns,
// entries are cached again without a restart.
func TestRedisDownServesFromDatabase(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"L1_TTL": "0", "RATE_LIMIT": "100-S"})
	link := proxyRedis(t, env)
	before, during, after := productID(t), productID(t), productID(t)
	rdb := dbtest.NewRedis(t, redisDB) // straight to Redis, not through the link
	base, _ := startApp(t, env)
	get := func(id int64) answer { return timedGet(fmt.Sprintf("%s/products/%d", base, id)) }

	for _, want := range []string{"MISS", "HIT"} {
		if a := get(before); a.status != http.StatusOK || a.header.Get("X-Cache") != want {
			t.Fatalf("GET before the outage: got %d X-Cache %q (%v), want 200 %s", a.status, a.header.Get("X-Cache"), a.err, want)
		}
	}

	link.SetDown(true)
	for i, id := range []int64{during, during, during, before, during} {
		a := get(id)
		if a.status != http.StatusOK || a.header.Get("X-Cache") != "MISS" || a.elapsed >= time.Second {
			t.Errorf("GET %d (#%d) with Redis down: got %d X-Cache %q after %s (%v), want 200 MISS in < 1s",
				id, i, a.status, a.header.Get("X-Cache"), a.elapsed, a.err)
		}
		if got := a.header.Get("X-RateLimit-Limit"); got != "100" || a.header.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("GET #%d with Redis down: X-RateLimit-Limit %q, Remaining %q; want 100 and a count (memory fallback)",
				i, got, a.header.Get("X-RateLimit-Remaining"))
		}
	}
	// Nothing was written while Redis was unreachable.
	if n := rdb.Exists(context.Background(), nsKey(env, repo.Key(during))).Val(); n != 0 {
		t.Errorf("key %s exists after reads with Redis down, want absent", repo.Key(during))
	}

	link.SetDown(false)
	eventually(t, 10*time.Second, "entries cached again after Redis came back", func() (bool, string) {
		a := get(after)
		n, err := rdb.Exists(context.Background(), nsKey(env, repo.Key(after))).Result()
		return a.status == http.StatusOK && a.header.Get("X-Cache") == "HIT" && n == 1,
			fmt.Sprintf("GET %d: %d X-Cache %q (%v); key %s exists %d (%v)", after, a.status, a.header.Get("X-Cache"), a.err, repo.Key(after), n, err)
	})
}
