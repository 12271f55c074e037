package repo_test

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestOrdersReadOnlyWithToken: an order is read back only with the token
// Create returned; a wrong token, another order's token and no token find
// nothing, exactly as an absent order; only the token's hash is stored.
func TestOrdersReadOnlyWithToken(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	ctx := testCtx(t)
	a, _, err := orders.Create(ctx, repo.NewOrder{ProductID: 21, Quantity: 1})
	if err != nil || len(a.Token) < 43 {
		t.Fatalf("Create = %+v, %v; want an order with a 256-bit token", a, err)
	}
	b, _, err := orders.Create(ctx, repo.NewOrder{ProductID: 21, Quantity: 1})
	if err != nil || b.Token == a.Token {
		t.Fatalf("second Create = %+v, %v; want a token of its own", b, err)
	}
	if got, err := orders.Get(ctx, a.ID, a.Token); err != nil || got.ID != a.ID || got.Token != "" {
		t.Errorf("Get with its token = %+v, %v; want order %d (token not echoed)", got, err, a.ID)
	}
	// One character changed, whatever it was (a fixed replacement would
	// sometimes be the token itself).
	wrong := "A" + a.Token[1:]
	if wrong == a.Token {
		wrong = "B" + a.Token[1:]
	}
	for name, tc := range map[string]struct {
		id    int64
		token string
	}{
		"wrong token":         {a.ID, wrong},
		"another order's":     {a.ID, b.Token},
		"no token":            {a.ID, ""},
		"absent order":        {a.ID + 1000, a.Token},
		"absent, no token":    {a.ID + 1000, ""},
		"the hash as a token": {a.ID, string(hash(a.Token))},
	} {
		if got, err := orders.Get(ctx, tc.id, tc.token); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("%s: Get = %+v, %v; want ErrNotFound", name, got, err)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM orders WHERE id = $1 AND token_sha256 = $2`, a.ID, hash(a.Token)); n != 1 {
		t.Errorf("orders storing the token's SHA-256: got %d, want 1", n)
	}
}

// TestMadeUpOrderTokensCostNoQuery: a token that cannot be one Create
// hands out (43 characters of unpadded base64url) finds nothing without
// a query, for an order that exists too; a well-formed wrong token is
// looked up (the row's hash decides), which shows the count can move.
func TestMadeUpOrderTokensCostNoQuery(t *testing.T) {
	t.Parallel()
	orders, pool := newOrders(t)
	ctx := testCtx(t)
	a, _, err := orders.Create(ctx, repo.NewOrder{ProductID: 24, Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		token   string
		queries int64
	}{
		{"one character", "x", 0},
		{"one short", a.Token[1:], 0},
		{"one long", a.Token + "A", 0},
		{"padded", a.Token[1:] + "=", 0},
		{"standard base64", "+" + a.Token[1:], 0},
		{"a space", " " + a.Token[1:], 0},
		{"not ASCII", "é" + a.Token[2:], 0},
		{"the hash", string(hash(a.Token)), 0},
		{"well-formed, wrong", strings.Repeat("A", len(a.Token)), 1},
	} {
		before := pool.Stat().AcquireCount()
		_, err := orders.Get(ctx, a.ID, tc.token)
		if !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("%s: Get = %v, want ErrNotFound", tc.name, err)
		}
		if q := pool.Stat().AcquireCount() - before; q != tc.queries {
			t.Errorf("%s: %d queries, want %d", tc.name, q, tc.queries)
		}
	}
}

// TestOrdersIdempotencyScopedToCaller: one Idempotency-Key is one order
// per caller. The same caller's replay gets the same order and token;
// another caller (another API key, or anonymous) using the same key gets
// an order of its own, never the first caller's order or token, and no
// 422 that would confirm the key exists.
func TestOrdersIdempotencyScopedToCaller(t *testing.T) {
	t.Parallel()
	orders, _ := newOrders(t)
	ctx := testCtx(t)
	key := "shared-" + dbtest.Unique()
	first, _, err := orders.Create(ctx, repo.NewOrder{ProductID: 22, Quantity: 1, IdempotencyKey: key, Scope: "key-a"})
	if err != nil {
		t.Fatal(err)
	}
	again, replayed, err := orders.Create(ctx, repo.NewOrder{ProductID: 22, Quantity: 1, IdempotencyKey: key, Scope: "key-a"})
	if err != nil || !replayed || again.ID != first.ID || again.Token != first.Token {
		t.Errorf("replay = %+v, %v, %v; want order %d with token %q", again, replayed, err, first.ID, first.Token)
	}
	for _, scope := range []string{"key-b", ""} {
		// A different body too: another caller's key must not answer 422.
		other, replayed, err := orders.Create(ctx, repo.NewOrder{ProductID: 23, Quantity: 2, IdempotencyKey: key, Scope: scope})
		if err != nil || replayed || other.ID == first.ID || other.Token == first.Token {
			t.Errorf("scope %q: Create = %+v, replayed %v, %v; want a new order of its own", scope, other, replayed, err)
		}
	}
	if _, err := orders.Get(ctx, first.ID, again.Token); err != nil {
		t.Errorf("Get with the replayed token: %v", err)
	}
}

func hash(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
