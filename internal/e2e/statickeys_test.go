package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/client"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestStaticKeysNeverLoadedByReads: a STATIC_KEYS product is warmed at
// start, so its first read is already a HIT, and it stays a HIT read after
// read well past CACHE_TTL, while an ordinary product read alongside goes
// stale and is refreshed (which shows the reads lasted long enough).
func TestStaticKeysNeverLoadedByReads(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	static, plain := productID(t), productID(t)
	for k, v := range map[string]string{"STATIC_KEYS": fmt.Sprint(static), "CACHE_TTL": "1s", "CACHE_SOFT_TTL": "500ms"} {
		env[k] = v
	}
	base, _ := startApp(t, env)
	rdb := dbtest.NewRedis(t, redisDB)
	if ttl := rdb.PTTL(context.Background(), nsKey(env, repo.Key(static))).Val(); ttl < time.Hour {
		t.Errorf("static product's Redis TTL after warm-up: %s, want STATIC_TTL (24h)", ttl)
	}
	plainOther := map[string]int{}
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		resp, _ := call(t, http.MethodGet, fmt.Sprintf("%s/products/%d", base, static), nil, "")
		if x := resp.Header.Get("X-Cache"); resp.StatusCode != http.StatusOK || x != "HIT" {
			t.Fatalf("static product: %d X-Cache %q, want 200 HIT on every read", resp.StatusCode, x)
		}
		resp, _ = call(t, http.MethodGet, fmt.Sprintf("%s/products/%d", base, plain), nil, "")
		if x := resp.Header.Get("X-Cache"); x != "HIT" {
			plainOther[x]++
		}
	}
	if plainOther["STALE"] == 0 {
		t.Errorf("ordinary product's non-HIT reads: %v; want STALE ones (and refreshes) past its 500ms soft TTL", plainOther)
	}
}

// TestStaticKeyWriteReachesEveryInstance: two instances on one database;
// B has the static product in its L1 (L1_TTL 30s). A write through A is
// seen by B within a few seconds, by invalidation rather than by L1
// expiry, and B's read is still a HIT: the write path stored it, no read
// loaded it.
func TestStaticKeyWriteReachesEveryInstance(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["API_KEYS"] = e2eAPIKey
	id := productID(t)
	for k, v := range map[string]string{"STATIC_KEYS": fmt.Sprint(id), "CACHE_TTL": "60s", "CACHE_SOFT_TTL": "50s", "L1_TTL": "30s"} {
		env[k] = v
	}
	a, b := launchApp(t, env), launchApp(t, env)
	baseA, baseB := a.waitListening(), b.waitListening()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	apiA, apiB := newAPI(t, baseA), newAPI(t, baseB, client.WithRetry(client.NoRetries))
	before, cache, err := apiB.GetProduct(ctx, id)
	if err != nil || cache != client.CacheHit {
		t.Fatalf("B's first read: %q, %v; want a HIT (warmed at start)", cache, err)
	}
	name := "static " + dbtest.Unique()
	if _, err := apiA.UpdateProduct(ctx, id, client.ProductUpdate{Name: name, PriceCents: before.PriceCents}); err != nil {
		t.Fatalf("update through A: %v", err)
	}
	written := time.Now()
	eventually(t, 5*time.Second, "B serves the write made through A", func() (bool, string) {
		p, cache, err := apiB.GetProduct(ctx, id)
		if err == nil && p.Name == name && cache != client.CacheHit {
			t.Errorf("B's read of the new value: X-Cache %q, want HIT (stored by the write, not loaded by a read)", cache)
		}
		return err == nil && p.Name == name, fmt.Sprintf("%q %q %v", p.Name, cache, err)
	})
	t.Logf("B saw the write %s after it", time.Since(written).Round(time.Millisecond))
}
