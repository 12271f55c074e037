package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/client"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestClientRetryAfterAndNoDuplicateOrders: five callers, each with its
// own client, place orders through a gateway against a service limited to
// 5 requests a second, and the gateway loses the answers of the first two
// orders the service places. Every retry reaches the service no sooner
// than the Retry-After of the answer before it, and every order in
// PostgreSQL carries the key of one logical order: the retries after lost
// answers were replayed, not placed again.
func TestClientRetryAfterAndNoDuplicateOrders(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["API_KEYS"] = e2eAPIKey
	env["RATE_LIMIT"] = "5-S"
	env["TRUSTED_PROXIES"] = "127.0.0.1/32"
	base, _ := startApp(t, env)
	gw := newGateway(t, base, testClientIP())
	lost := 0
	gw.lose = func(ex exchange) bool { // called under the gateway's lock
		if ex.method == http.MethodPost && ex.path == "/orders" && ex.status == http.StatusCreated && lost < 2 {
			lost++
			return true
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	policy := client.WithRetry(client.RetryPolicy{MaxAttempts: 6, MaxElapsed: 30 * time.Second})
	product, err := newAPI(t, gw.URL, policy).CreateProduct(ctx, client.NewProduct{Name: "retry " + dbtest.Unique(), PriceCents: 100, Stock: 1000})
	if err != nil {
		t.Fatalf("CreateProduct: %v", err)
	}

	const callers, perCaller = 5, 3
	keys := placeOrders(t, ctx, gw.URL, policy, product.ID, callers, perCaller)
	placed, replayed := 0, 0
	for _, o := range keys {
		switch {
		case o.err == nil:
			placed++
			if o.res.Replayed {
				replayed++
			}
		case !errors.Is(o.err, client.ErrRateLimited):
			t.Errorf("order %s: %v, want success or ErrRateLimited after its retries", o.key, o.err)
		}
	}
	byKey, afterRetryAfter := checkRetrySpacing(t, gw)
	stored := checkStoredOrders(t, ctx, env["DATABASE_URL"], product.ID, keys)
	if stored < placed {
		t.Errorf("%d orders in PostgreSQL, fewer than the %d the client placed", stored, placed)
	}
	t.Logf("%d logical orders: %d placed (%d replayed after a lost answer), %d stored; %d POST /orders sent, %d retries honoured a Retry-After",
		callers*perCaller, placed, replayed, stored, countPosts(byKey), afterRetryAfter)
}

// orderOutcome is one logical order: its key and what the client returned.
type orderOutcome struct {
	key string
	res client.OrderResult
	err error
}

// placeOrders has callers clients, each with its own budget, place
// perCaller orders of product one after another; the outcomes by key.
func placeOrders(t *testing.T, ctx context.Context, url string, policy client.Option, product int64, callers, perCaller int) map[string]orderOutcome {
	t.Helper()
	outcomes := make([][]orderOutcome, callers)
	var wg sync.WaitGroup
	for i := range callers {
		// A roomy budget: this test is about when retries land and what
		// they place, so the budget must not be what ends a call.
		api := newAPI(t, url, policy, client.WithBudget(client.NewBudget(100, 0.1)))
		wg.Go(func() {
			for range perCaller {
				key := client.NewIdempotencyKey()
				res, err := api.CreateOrder(ctx, client.NewOrder{ProductID: product, Quantity: 1, IdempotencyKey: key})
				outcomes[i] = append(outcomes[i], orderOutcome{key, res, err})
			}
		})
	}
	wg.Wait()
	keys := map[string]orderOutcome{}
	for _, os := range outcomes {
		for _, o := range os {
			keys[o.key] = o
		}
	}
	return keys
}

// checkRetrySpacing: every retry of a logical order reached the service no
// sooner than the Retry-After of the answer before it, and the lost
// answers were retried. It returns each order's attempts and how many
// retries followed a Retry-After.
func checkRetrySpacing(t *testing.T, gw *gateway) (byKey map[string][]exchange, afterRetryAfter int) {
	t.Helper()
	// Each logical order's attempts, in the order the service saw them.
	byKey = map[string][]exchange{}
	for _, ex := range gw.exchanges() {
		if ex.method == http.MethodPost && ex.path == "/orders" {
			byKey[ex.key] = append(byKey[ex.key], ex)
		}
	}
	afterLost := 0
	for key, exs := range byKey {
		slices.SortFunc(exs, func(a, b exchange) int { return a.arrived.Compare(b.arrived) })
		for i := 1; i < len(exs); i++ {
			prev, next := exs[i-1], exs[i]
			if gap := next.arrived.Sub(prev.answered); gap < prev.retryAfter {
				t.Errorf("order %s: attempt %d came %s after a %d with Retry-After %s", key, i+1, gap, prev.status, prev.retryAfter)
			}
			if prev.retryAfter > 0 {
				afterRetryAfter++
			}
			if prev.lost {
				afterLost++
			}
		}
	}
	if afterRetryAfter == 0 || afterLost != 2 {
		t.Errorf("%d retries after a Retry-After and %d after a lost answer; want some and 2: the test exercised nothing", afterRetryAfter, afterLost)
	}
	return byKey, afterRetryAfter
}

// checkStoredOrders: every order of product in PostgreSQL carries the key
// of one logical order, and the order its call returned. It returns how
// many there are.
func checkStoredOrders(t *testing.T, ctx context.Context, dbURL string, product int64, keys map[string]orderOutcome) (stored int) {
	t.Helper()
	conn := dbConn(t, dbURL)
	rows, err := conn.Query(ctx, `SELECT id, idempotency_key FROM orders WHERE product_id = $1`, product)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var key *string
		if err := rows.Scan(&id, &key); err != nil {
			t.Fatal(err)
		}
		stored++
		o, ok := keys[deref(key)]
		switch {
		case !ok:
			t.Errorf("order %d has key %q, which no logical order sent: a retry placed a second order", id, deref(key))
		case o.err == nil && o.res.ID != id:
			t.Errorf("order %d has key %s, whose call returned order %d", id, deref(key), o.res.ID)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return stored
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func countPosts(byKey map[string][]exchange) int {
	n := 0
	for _, exs := range byKey {
		n += len(exs)
	}
	return n
}
