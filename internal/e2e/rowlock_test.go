package e2e

import (
	"context"
	"fmt"
	"net/http"
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

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := dbConn(t, env["DATABASE_URL"]).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT id FROM products WHERE id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}

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

	_ = tx.Rollback(ctx)
	resp, raw = call(t, "PUT", fmt.Sprint(base, "/products/", held), nil, `{"name":"released","price_cents":3}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("PUT once the row is let go: %d %s, want 200", resp.StatusCode, raw)
	}
}
