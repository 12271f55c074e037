package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-guard/api/client"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// The client's tests against the real service: the app runs in process
// (run), on a fresh PostgreSQL database and Redis db 4. The client's pure
// logic (backoff, Retry-After parsing, budget accounting) is tested in
// client/.

// e2eAPIKey is the write key the client tests start the app with.
const e2eAPIKey = "client-e2e-key-0123456789"

func newAPI(t *testing.T, base string, opts ...client.Option) *client.Client {
	t.Helper()
	api, err := client.New(base, append([]client.Option{client.WithAPIKey(e2eAPIKey)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// TestClientEveryRoute calls every route once through the client and
// checks the typed answers, errors included.
func TestClientEveryRoute(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["API_KEYS"] = e2eAPIKey
	base, _ := startApp(t, env)
	api := newAPI(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if err := api.Health(ctx); err != nil {
		t.Errorf("Health: %v", err)
	}
	if r, err := api.Ready(ctx); err != nil || !r.Ready || r.Status != "ready" || len(r.Checks) == 0 {
		t.Errorf("Ready = %+v, %v; want ready with its checks", r, err)
	}

	name := "client " + dbtest.Unique()
	created, err := api.CreateProduct(ctx, client.NewProduct{Name: name, PriceCents: 1234, Stock: 3})
	if err != nil || created.ID <= 0 || created.Name != name || created.ETag == "" {
		t.Fatalf("CreateProduct = %+v, %v; want the new product with an ETag", created, err)
	}
	p, cache, err := api.GetProduct(ctx, created.ID)
	if err != nil || p.Name != name || p.PriceCents != 1234 || (cache != client.CacheHit && cache != client.CacheMiss) {
		t.Errorf("GetProduct = %+v %q, %v; want %q at 1234, HIT or MISS", p, cache, err, name)
	}
	upd, err := api.UpdateProduct(ctx, created.ID, client.ProductUpdate{Name: name + "!", PriceCents: 999, IfMatch: p.ETag})
	if err != nil || upd.PriceCents != 999 || upd.ETag == p.ETag {
		t.Errorf("UpdateProduct = %+v, %v; want price 999 and a new ETag", upd, err)
	}
	var ae *client.APIError
	_, err = api.UpdateProduct(ctx, created.ID, client.ProductUpdate{Name: "late", PriceCents: 1, IfMatch: p.ETag})
	if !errors.As(err, &ae) || ae.Status != http.StatusPreconditionFailed || ae.Attempts != 1 {
		t.Errorf("UpdateProduct with a stale If-Match: %v, want one 412", err)
	}

	page, err := api.ListProducts(ctx, 2, 0)
	if err != nil || len(page.Items) != 2 || page.Items[0].ID != 1 || page.NextAfter == nil || *page.NextAfter != 2 {
		t.Errorf("ListProducts(2, 0) = %+v, %v; want products 1 and 2, next after 2", page, err)
	}

	order, err := api.CreateOrder(ctx, client.NewOrder{ProductID: created.ID, Quantity: 2})
	if err != nil || order.ID <= 0 || order.TotalCents != 2*999 || order.Token == "" ||
		order.Location != fmt.Sprintf("/orders/%d?token=%s", order.ID, order.Token) || order.Replayed {
		t.Errorf("CreateOrder = %+v, %v; want 2 × 999 at /orders/<id>?token=<token>, not replayed", order, err)
	}
	if _, err := api.CreateOrder(ctx, client.NewOrder{ProductID: created.ID, Quantity: 2}); !errors.Is(err, client.ErrOutOfStock) {
		t.Errorf("CreateOrder beyond the stock: %v, want ErrOutOfStock", err)
	}
	if _, _, err := api.GetProduct(ctx, 0); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Attempts != 1 {
		t.Errorf("GetProduct(0): %v, want one 400", err)
	}
	if _, _, err := api.GetProduct(ctx, 1<<40); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetProduct(absent): %v, want ErrNotFound", err)
	}
	if rep, err := api.TopProducts(ctx, 30, 5); err != nil || rep.Days != 30 || len(rep.Items) > 5 {
		t.Errorf("TopProducts(30, 5) = %+v, %v; want days 30, at most 5 rows", rep, err)
	}

	got, err := api.GetOrder(ctx, order.ID, order.Token)
	if err != nil || got.ID != order.ID || got.Quantity != 2 || got.TotalCents != order.TotalCents {
		t.Errorf("GetOrder(%d) = %+v, %v; want the order CreateOrder returned", order.ID, got, err)
	}
	if _, err := api.GetOrder(ctx, order.ID, "not-"+order.Token); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetOrder with a wrong token: %v, want ErrNotFound", err)
	}
}
