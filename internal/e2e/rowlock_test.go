package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRowHeldLongKeepsTheBreakerClosed: a transaction outside the app
// holds one product's row (an admin's long edit, a batch job) while
// clients keep writing it. Those writes answer 503 with Retry-After, and
// nothing else notices: an order and a write of another product go
// through, and the main breaker stays closed. Their lock waits ended as
// statement timeouts, which the breaker counts as a database too slow to
// answer: it opened, and the order and the other write answered 503.
func TestRowHeldLongKeepsTheBreakerClosed(t *testing.T) {
	t.Parallel()
	held, other := productID(t), productID(t)
	env := testEnv(t)
	env["DB_STATEMENT_TIMEOUT"] = "1s"
	base, _ := startApp(t, env)

	release := holdRow(t, env, held)
	defer release()

	const writes = 6 // more than BREAKER_FAILURES (5)
	var wg sync.WaitGroup
	statuses := make([]string, writes)
	for i := range writes {
		wg.Go(func() {
			resp, raw := call(t, "PUT", fmt.Sprint(base, "/products/", held), nil, fmt.Sprintf(`{"name":"held-%d","price_cents":1}`, i))
			statuses[i] = fmt.Sprint(resp.StatusCode, " Retry-After:", resp.Header.Get("Retry-After"), " ", string(raw))
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Errorf("PUT of the held product: %s, want 503 with Retry-After", statuses[i])
			}
		})
	}
	wg.Wait()

	resp, raw := call(t, "POST", base+"/orders", nil, fmt.Sprintf(`{"product_id":%d,"quantity":1}`, other))
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("order of another product after %d waits on a held row: %d %s, want 201", writes, resp.StatusCode, raw)
	}
	resp, raw = call(t, "PUT", fmt.Sprint(base, "/products/", other), nil, `{"name":"not-held","price_cents":2}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("PUT of another product: %d %s, want 200", resp.StatusCode, raw)
	}
	if v := scrape(t, base)[`stampede_breaker_state{breaker="postgres_main"}`]; v != 0 {
		t.Errorf("main breaker state %v after waits on a held row, want 0 (closed): the database was fine", v)
	}

	release()
	resp, raw = call(t, "PUT", fmt.Sprint(base, "/products/", held), nil, `{"name":"released","price_cents":3}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("PUT once the row is let go: %d %s, want 200", resp.StatusCode, raw)
	}
}

// TestRowHeldLongLeavesThePoolToOthers: while a transaction outside the app
// holds one product's row, thirty clients keep ordering it. Each order of
// it waits for the row (then answers 503, nothing written), but at most
// two at a time hold a connection for it: reads of uncached products and
// orders of other products go on being served from the rest of the pool.
// With every waiting order holding a connection, the pool of four was
// taken whole and those answered 503 for as long as the row was held.
func TestRowHeldLongLeavesThePoolToOthers(t *testing.T) {
	t.Parallel()
	held := productID(t)
	env := testEnv(t)
	env["DB_STATEMENT_TIMEOUT"] = "2s"
	env["DB_MAIN_MAX_CONNS"] = "4"
	env["RATE_LIMIT"], env["ORDER_RATE_LIMIT"] = "off", "off"
	base, _ := startApp(t, env)

	release := holdRow(t, env, held)
	defer release()

	// Thirty clients order the held product for 3 s, each again as soon as
	// it is answered.
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				resp, raw, err := send("POST", base+"/orders", nil, fmt.Sprintf(`{"product_id":%d,"quantity":1}`, held))
				if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("order of the held product: %d %s, want 503 (nothing written)", resp.StatusCode, raw)
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // the held product's orders have filled what they may
	var refused []string
	for i := range 10 {
		other := productID(t)
		for _, r := range []struct{ method, path, body string }{
			{"GET", fmt.Sprint("/products/", other), ""},
			{"POST", "/orders", fmt.Sprintf(`{"product_id":%d,"quantity":1}`, other)},
		} {
			resp, raw := call(t, r.method, base+r.path, nil, r.body)
			if resp.StatusCode/100 != 2 {
				refused = append(refused, fmt.Sprintf("%d: %s %s: %d %s", i, r.method, r.path, resp.StatusCode, raw))
			}
		}
	}
	wg.Wait()
	if len(refused) > 0 {
		t.Errorf("other products while thirty clients order a held one, %d of 20 not served:\n%s", len(refused), strings.Join(refused, "\n"))
	}
}

// holdRow holds product id's row in a transaction of the test's own, as an
// admin's edit left open in psql would, until release (safe to call twice).
func holdRow(t *testing.T, env map[string]string, id int64) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tx, err := dbConn(t, env["DATABASE_URL"]).Begin(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM products WHERE id = $1 FOR UPDATE`, id); err != nil {
		_ = tx.Rollback(context.Background())
		cancel()
		t.Fatal(err)
	}
	return func() {
		_ = tx.Rollback(context.Background())
		cancel()
	}
}
