package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// envelope is a cache entry as anyone who can write to Redis can make it:
// the envelope's magic (version 2, or magic), flags, soft expiry, load
// time, hard expiry and version around payload — everything but a MAC made
// with the key the fleet keeps in PostgreSQL.
func envelope(magic string, flags byte, soft, hard time.Time, payload []byte) string {
	b := append([]byte(magic), flags)
	b = binary.BigEndian.AppendUint64(b, uint64(soft.UnixMicro()))
	b = binary.BigEndian.AppendUint64(b, 1000)
	if magic == "sg\x02" {
		b = binary.BigEndian.AppendUint64(b, uint64(hard.UnixMicro()))
		b = binary.BigEndian.AppendUint64(b, uint64(time.Now().UnixMicro()))
	}
	return string(append(b, payload...))
}

// forgedProduct is product id with the given name and price, as JSON.
func forgedProduct(id int64, name string, price int64) []byte {
	b, _ := json.Marshal(repo.Product{ID: id, Name: name, PriceCents: price, UpdatedAt: time.Now().UTC()})
	return b
}

// TestForgedEntriesRefusedByDefault: with no CACHE_SIGNING_KEY set (the
// default), each forgery the security probe planted in Redis is refused:
// a 1-cent price, price_cents -5, a <script> name, a forged "absent" entry
// for a product that exists, one with no Redis expiry and a soft expiry ten
// years ahead, and the probe's own (previous-format) envelope. Every GET
// answers the database's product (MISS), and the forgery is replaced in
// Redis by a signed entry with a TTL.
func TestForgedEntriesRefusedByDefault(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"CACHE_SIGNING_KEY": ""})
	base, _ := startApp(t, env)
	rdb := dbtest.NewRedis(t, redisDB)
	conn := dbConn(t, env["DATABASE_URL"])
	ctx := context.Background()
	now := time.Now()
	soon, later := now.Add(20*time.Second), now.Add(5*time.Minute)
	tests := []struct {
		name   string
		forge  func(id int64) string
		expiry time.Duration // Redis TTL of the planted key; 0: none
	}{
		{"1-cent price", func(id int64) string { return envelope("sg\x02", 0, soon, later, forgedProduct(id, "Product", 1)) }, time.Minute},
		{"negative price", func(id int64) string { return envelope("sg\x02", 0, soon, later, forgedProduct(id, "Product", -5)) }, time.Minute},
		{"<script> name", func(id int64) string {
			return envelope("sg\x02", 0, soon, later, forgedProduct(id, "<script>alert(1)</script>", 100))
		}, time.Minute},
		{"absent entry for a product that exists", func(int64) string { return envelope("sg\x02", 1, soon, soon, nil) }, time.Minute},
		{"no Redis expiry, soft expiry in ten years", func(id int64) string {
			far := now.AddDate(10, 0, 0)
			return envelope("sg\x02", 0, far, far, forgedProduct(id, "Product", 1))
		}, 0},
		{"the probe's envelope (previous format)", func(id int64) string {
			return envelope("sg\x01", 0, now.Add(time.Hour), time.Time{}, forgedProduct(id, "Product", 1))
		}, time.Minute},
	}
	for _, tc := range tests {
		id := productID(t) // one product per forgery
		t.Run(tc.name, func(t *testing.T) {
			var want repo.Product
			if err := conn.QueryRow(ctx, `SELECT name, price_cents FROM products WHERE id = $1`, id).Scan(&want.Name, &want.PriceCents); err != nil {
				t.Fatal(err)
			}
			key, planted := nsKey(env, repo.Key(id)), tc.forge(id)
			if err := rdb.Set(ctx, key, planted, tc.expiry).Err(); err != nil {
				t.Fatalf("plant: %v", err)
			}
			resp, body := call(t, http.MethodGet, fmt.Sprintf("%s/products/%d", base, id), nil, "")
			var got repo.Product
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil {
				t.Fatalf("GET: %d %s, want 200 and the product", resp.StatusCode, body)
			}
			if got.Name != want.Name || got.PriceCents != want.PriceCents || resp.Header.Get("X-Cache") != "MISS" {
				t.Fatalf("served %s (X-Cache %s), want the database's %q at %d cents, MISS", body, resp.Header.Get("X-Cache"), want.Name, want.PriceCents)
			}
			if raw, ttl := rdb.Get(ctx, key).Val(), rdb.PTTL(ctx, key).Val(); raw == planted || ttl <= 0 {
				t.Errorf("Redis after the load: planted value kept %t, TTL %s; want a new entry with a TTL", raw == planted, ttl)
			}
		})
	}
}

// TestReplayedEntryRefusedAfterPut: the probe's replay. An old, genuinely
// signed entry of a product, copied from Redis before a PUT changed its
// price and put back after it, is refused as a replay by the instance that
// served the PUT and by another one that only heard the PUT's fill signal
// (it never read the new entry): both answer the new price (MISS), never
// the old one as a HIT, and count the replay.
func TestReplayedEntryRefusedAfterPut(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	writer, _ := startApp(t, env)
	other, _ := startApp(t, env)
	rdb := dbtest.NewRedis(t, redisDB)
	ctx := context.Background()
	id := productID(t)
	key := nsKey(env, repo.Key(id))
	price := func(base string) (int64, string) {
		t.Helper()
		resp, body := call(t, http.MethodGet, fmt.Sprintf("%s/products/%d", base, id), nil, "")
		var p repo.Product
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		return p.PriceCents, resp.Header.Get("X-Cache")
	}
	old, _ := price(writer)
	oldEntry := rdb.Get(ctx, key).Val() // genuine: signed by the fleet's key
	heard := scrape(t, other)["stampede_cache_fill_signals_total"]
	resp, body := call(t, http.MethodPut, fmt.Sprintf("%s/products/%d", writer, id), nil,
		fmt.Sprintf(`{"name":"Renamed","price_cents":%d}`, old+1000))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	dbtest.WaitFor(t, "the PUT's fill signal on the other instance", func() bool {
		return scrape(t, other)["stampede_cache_fill_signals_total"] > heard
	})
	for _, inst := range []struct{ name, base string }{{"the writer", writer}, {"the other instance", other}} {
		if err := rdb.Set(ctx, key, oldEntry, time.Minute).Err(); err != nil {
			t.Fatalf("replay: %v", err)
		}
		if got, xc := price(inst.base); got != old+1000 || xc != "MISS" {
			t.Errorf("%s after the replay: %d cents (X-Cache %s), want the new %d, MISS", inst.name, got, xc, old+1000)
		}
		if n := scrape(t, inst.base)[`stampede_cache_entries_refused_total{reason="replay"}`]; n < 1 {
			t.Errorf("%s: %v replays counted, want ≥ 1", inst.name, n)
		}
	}
}
