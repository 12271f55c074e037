package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// forgedEntry is what anyone with write access to Redis can plant: a
// well-formed, unsigned cache envelope (forgery_test.go) around a product
// body that passes the repo's own verification (it decodes, it is
// canonical, and its id matches the key).
func forgedEntry(id int64) string {
	now := time.Now()
	return envelope("sg\x02", 0, now.Add(20*time.Second), now.Add(5*time.Minute), forgedProduct(id, "forged", 0))
}

// TestCacheSigningKey: a forged product entry planted in Redis by a raw
// client is a miss, whether CACHE_SIGNING_KEY is set or not (then the key
// kept in PostgreSQL signs the entries): the product is loaded from
// PostgreSQL, the forged value replaced in Redis, and the answer carries
// the real price — never served to users, nor to CDNs as public.
func TestCacheSigningKey(t *testing.T) {
	t.Parallel()
	id := productID(t)
	for _, tc := range []struct {
		name       string
		key        string
		wantForged bool
	}{
		{"default: the key kept in PostgreSQL", "", false},
		{"CACHE_SIGNING_KEY set", "k" + strings.Repeat("0123456789", 4), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, map[string]string{"CACHE_SIGNING_KEY": tc.key})
			rdb := dbtest.NewRedis(t, redisDB)
			base, _ := startApp(t, env)
			ctx := context.Background()
			key := nsKey(env, repo.Key(id))
			planted := forgedEntry(id)
			if err := rdb.Set(ctx, key, planted, time.Minute).Err(); err != nil {
				t.Fatalf("plant: %v", err)
			}
			resp, body, err := send(http.MethodGet, fmt.Sprintf("%s/products/%d", base, id), nil, "")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET: %v %v %s", resp, err, body)
			}
			var got repo.Product
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("GET: body %s: %v", body, err)
			}
			served := got.Name == "forged"
			cc, xc := resp.Header.Get("Cache-Control"), resp.Header.Get("X-Cache")
			if served != tc.wantForged {
				t.Fatalf("forged entry served: %t, want %t (body %s, X-Cache %s, Cache-Control %q)", served, tc.wantForged, body, xc, cc)
			}
			t.Logf("body %s, X-Cache %s, Cache-Control %q", body, xc, cc)
			if tc.wantForged {
				return // what the key prevents: the forgery above, served as a HIT
			}
			if xc != "MISS" || got.PriceCents == 0 {
				t.Errorf("with a signing key: X-Cache %s, price %d; want MISS and the database's price", xc, got.PriceCents)
			}
			if raw := rdb.Get(ctx, key).Val(); raw == planted || !strings.Contains(raw, `"name":"`+got.Name+`"`) {
				t.Errorf("Redis holds %q after the load, want the real product, signed", raw)
			}
		})
	}
}
