package repo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// Product ids are per test: all tests share Redis DB 2 and repo.Key has no
// prefix, so two parallel tests must never read the same id through the
// cache.

// seededProduct reads product id straight from the database.
func seededProduct(t *testing.T, pool *db.Pool, id int64) repo.Product {
	t.Helper()
	p := repo.Product{ID: id}
	ctx := testCtx(t)
	if err := pool.With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT name, price_cents, updated_at FROM products WHERE id = $1`, id).
			Scan(&p.Name, &p.PriceCents, &p.UpdatedAt)
	}); err != nil {
		t.Fatalf("select product %d: %v", id, err)
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	return p
}

// get calls Get and checks the product, the status and the number of loads
// it cost.
func get(t *testing.T, products *repo.Products, c *cache.Cache, id int64, want repo.Product, wantStatus cache.Status, wantLoads int64) {
	t.Helper()
	before := c.Stats().Loads
	got, f, err := products.Get(testCtx(t), id)
	if err != nil {
		t.Fatalf("Get(%d): got error %v, want nil", id, err)
	}
	if got != want {
		t.Errorf("Get(%d): got %+v, want %+v", id, got, want)
	}
	if f.Status != wantStatus {
		t.Errorf("Get(%d) status: got %v, want %v", id, f.Status, wantStatus)
	}
	if loads := c.Stats().Loads - before; loads != wantLoads {
		t.Errorf("Get(%d) database loads: got %d, want %d", id, loads, wantLoads)
	}
}

// checkFresh checks a write's updated_at: set by this write, in UTC.
func checkFresh(t *testing.T, at time.Time) {
	t.Helper()
	if at.Location() != time.UTC || time.Since(at) > time.Minute || time.Until(at) > time.Minute {
		t.Errorf("updated_at: got %v, want about now, in UTC", at)
	}
}

func TestProductsGetMissThenHit(t *testing.T) {
	t.Parallel()
	const id = 101
	products, c, pool := newProducts(t, db.Config{}, id)
	want := seededProduct(t, pool, id)

	get(t, products, c, id, want, cache.Miss, 1)
	get(t, products, c, id, want, cache.Hit, 0)
}

func TestProductsGetAbsentIsCachedNegatively(t *testing.T) {
	t.Parallel()
	const id = 999999
	products, c, pool := newProducts(t, db.Config{}, id)

	for i, wantLoads := range []int64{1, 0} {
		before := c.Stats().Loads
		_, _, err := products.Get(testCtx(t), id)
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get #%d(%d): got error %v, want ErrNotFound", i+1, id, err)
		}
		if loads := c.Stats().Loads - before; loads != wantLoads {
			t.Errorf("Get #%d(%d) database loads: got %d, want %d", i+1, id, loads, wantLoads)
		}
	}
	// The row now exists, but nothing told the cache: a Get that still says
	// "not found" proves it did not ask the database.
	exec(t, pool, `INSERT INTO products (id, name, price_cents) VALUES ($1, 'sneaked in', 1)`, id)
	if _, _, err := products.Get(testCtx(t), id); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("Get(%d) after a direct insert: got error %v, want the cached ErrNotFound", id, err)
	}
}

func TestProductsCreateReplacesNegativeEntry(t *testing.T) {
	t.Parallel()
	products, c, pool := newProducts(t, db.Config{})
	// The id Create will get; read it through the cache first, so a
	// negative entry exists that Create must replace.
	next := queryInt(t, pool, `SELECT last_value + 1 FROM products_id_seq`)
	forget(t, c, next)
	if _, _, err := products.Get(testCtx(t), next); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get(%d) before Create: got error %v, want ErrNotFound", next, err)
	}

	in := repo.NewProduct{Name: "Widget", PriceCents: 1234, Stock: 5}
	created, err := products.Create(testCtx(t), in)
	if err != nil {
		t.Fatalf("Create(%+v): %v", in, err)
	}
	if created.ID != next || created.ID <= 1000 {
		t.Errorf("created id: got %d, want %d (> 1000)", created.ID, next)
	}
	checkFresh(t, created.UpdatedAt)
	if want := (repo.Product{ID: created.ID, Name: in.Name, PriceCents: in.PriceCents, UpdatedAt: created.UpdatedAt}); created != want {
		t.Errorf("Create: got %+v, want %+v", created, want)
	}
	if got := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, created.ID); got != int64(in.Stock) {
		t.Errorf("stored stock: got %d, want %d", got, in.Stock)
	}
	// Written through: a hit, no load.
	get(t, products, c, created.ID, created, cache.Hit, 0)
}

func TestProductsUpdate(t *testing.T) {
	t.Parallel()
	const id, absent = 301, 999998
	products, c, pool := newProducts(t, db.Config{}, id, absent)
	get(t, products, c, id, seededProduct(t, pool, id), cache.Miss, 1) // cache the old values

	seven := int32(7)
	tests := []struct {
		name      string
		in        repo.ProductUpdate
		wantStock int64
	}{
		{"nil stock keeps stock", repo.ProductUpdate{Name: "Renamed", PriceCents: 4321}, 1000},
		{"stock adjusted", repo.ProductUpdate{Name: "Renamed again", PriceCents: 99, StockDelta: &seven}, 1007},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := products.Update(testCtx(t), id, tt.in)
			if err != nil {
				t.Fatalf("Update(%d, %+v): %v", id, tt.in, err)
			}
			checkFresh(t, got.UpdatedAt)
			want := repo.Product{ID: id, Name: tt.in.Name, PriceCents: tt.in.PriceCents, UpdatedAt: got.UpdatedAt}
			if got != want {
				t.Errorf("Update: got %+v, want %+v", got, want)
			}
			// Write-through: the very next read sees the new values, from
			// the cache.
			get(t, products, c, id, want, cache.Hit, 0)
			if stock := queryInt(t, pool, `SELECT stock FROM products WHERE id = $1`, id); stock != tt.wantStock {
				t.Errorf("stock: got %d, want %d", stock, tt.wantStock)
			}
		})
	}

	t.Run("absent id", func(t *testing.T) {
		_, err := products.Update(testCtx(t), absent, repo.ProductUpdate{Name: "x", PriceCents: 1})
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Update(%d): got error %v, want ErrNotFound", absent, err)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM products WHERE id = $1`, absent); n != 0 {
			t.Errorf("rows with id %d: got %d, want 0", absent, n)
		}
	})
}

// TestProductsCreateSkipsIdsTaken: rows inserted with ids of their own
// just past the sequence (an import without setval) take the ids Create
// would be handed. Create tries the next ones rather than failing the
// client with a duplicate key (a 500); with more taken in a row than it
// tries, it fails naming the fix, and nothing is inserted.
func TestProductsCreateSkipsIdsTaken(t *testing.T) {
	t.Parallel()
	products, _, pool := newProducts(t, db.Config{})
	next := queryInt(t, pool, `SELECT last_value + 1 FROM products_id_seq`)
	exec(t, pool, `INSERT INTO products (id, name, price_cents) SELECT g, 'imported', 1 FROM generate_series($1::bigint, $1::bigint + 2) g`, next)
	created, err := products.Create(testCtx(t), repo.NewProduct{Name: "after the import", PriceCents: 1})
	if err != nil || created.ID != next+3 {
		t.Fatalf("Create with the next 3 ids taken: %+v, %v; want id %d", created, err, next+3)
	}

	next = created.ID + 1
	exec(t, pool, `INSERT INTO products (id, name, price_cents) SELECT g, 'imported', 1 FROM generate_series($1::bigint, $1::bigint + 99) g`, next)
	rows := queryInt(t, pool, `SELECT count(*) FROM products`)
	if _, err := products.Create(testCtx(t), repo.NewProduct{Name: "after a large import", PriceCents: 1}); err == nil || !strings.Contains(err.Error(), "setval") {
		t.Errorf("Create with the next 100 ids taken: %v, want an error naming setval", err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM products`); n != rows {
		t.Errorf("rows after the failed Create: %d, want %d", n, rows)
	}
}
