package repo_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/pgbouncer"
	"github.com/stampede-guard/api/repo"
)

// viaPooler opens a fresh seeded database (migrated directly: migrations
// hold a session advisory lock) and returns a direct pool and a pool that
// reaches it as the app would with DB_POOLER: itself, or through a local
// PgBouncer in transaction pooling. The server-side statement_timeout is
// set on the database, as a pooled deployment must.
func viaPooler(t *testing.T, pooler db.Pooler) (direct, app *db.Pool) {
	t.Helper()
	direct = dbtest.NewPool(t, "repo", db.Config{MaxConns: 4})
	name := databaseName(t, direct)
	exec(t, direct, fmt.Sprintf(`ALTER DATABASE %q SET statement_timeout = '1s'`, name))
	if !pooler.Behind() {
		return direct, direct
	}
	url := withDatabase(t, pgbouncer.Start(t, dbtest.AdminURL()), name)
	app, err := db.Open(testCtx(t), db.Config{URL: url, Name: "pooled", MaxConns: 20, Pooler: pooler,
		StatementTimeout: time.Second, AcquireTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open through PgBouncer: %v", err)
	}
	t.Cleanup(app.Close)
	return direct, app
}

// databaseName is the name of the database pool is on.
func databaseName(t *testing.T, pool *db.Pool) string {
	t.Helper()
	ctx := testCtx(t)
	var name string
	if err := pool.With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name)
	}); err != nil {
		t.Fatalf("current_database: %v", err)
	}
	return name
}

// withDatabase is raw with its database set to name.
func withDatabase(t *testing.T, raw, name string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestBehindPgBouncer: checkout (no oversell, idempotent retries, each in
// one transaction with a transaction-scoped advisory lock), product reads
// and writes, and the statement timeout all hold through PgBouncer in
// transaction pooling as they do directly. Many concurrent callers over
// few server connections, so consecutive statements of one client land on
// different server connections: pgx's default statement cache would fail
// here ("prepared statement … does not exist").
func TestBehindPgBouncer(t *testing.T) {
	t.Parallel()
	for _, pooler := range []db.Pooler{db.PoolerNone, db.PoolerPgBouncer} {
		t.Run(string(pooler), func(t *testing.T) {
			t.Parallel()
			direct, app := viaPooler(t, pooler)
			ctx := testCtx(t)
			orders := repo.NewOrders(app, dbtest.Logger(t))

			const product, stock, buyers = 42, 5, 40
			exec(t, direct, `UPDATE products SET stock = $2 WHERE id = $1`, product, stock)
			errs := make([]error, buyers)
			var wg sync.WaitGroup
			for i := range buyers {
				wg.Go(func() {
					in := repo.NewOrder{ProductID: product, Quantity: 1}
					if i%2 == 0 { // half of them retry with a key: one order per key
						in.IdempotencyKey = fmt.Sprintf("k-%d", i/4)
					}
					_, _, errs[i] = orders.Create(ctx, in)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil && !errors.Is(err, repo.ErrOutOfStock) {
					t.Errorf("buyer %d: %v", i, err)
				}
			}
			if got := queryInt(t, direct, `SELECT stock FROM products WHERE id = $1`, product); got != 0 {
				t.Errorf("stock afterwards: got %d, want 0", got)
			}
			if got := queryInt(t, direct, `SELECT count(*) FROM orders WHERE product_id = $1 AND created_at > now() - interval '1 hour'`, product); got != stock {
				t.Errorf("orders: got %d, want %d (never oversold)", got, stock)
			}

			products := repo.NewProducts(app, newCache(t), dbtest.Logger(t))
			id := int64(900 + len(pooler)) // ids no other test of this package reads through the cache
			forget(t, newCache(t), id)
			for range 20 {
				wg.Go(func() {
					if _, _, err := products.Get(ctx, id); err != nil {
						t.Errorf("Get %d: %v", id, err)
					}
				})
			}
			wg.Wait()

			err := app.With(ctx, func(conn db.Conn) error {
				_, err := conn.Exec(ctx, `SELECT pg_sleep(3)`)
				return err
			})
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
				t.Errorf("pg_sleep(3) with a 1 s server statement_timeout: got %v, want query_canceled (57014)", err)
			}
		})
	}
}

// TestPoolerNeedsServerTimeout: behind a pooler the client's own
// statement_timeout cannot reach the server, so a database without one is
// refused at start rather than run without any.
func TestPoolerNeedsServerTimeout(t *testing.T) {
	t.Parallel()
	direct := dbtest.NewPool(t, "repo", db.Config{MaxConns: 2})
	name := databaseName(t, direct)
	exec(t, direct, fmt.Sprintf(`ALTER DATABASE %q SET statement_timeout = 0`, name))
	url := withDatabase(t, pgbouncer.Start(t, dbtest.AdminURL()), name)
	p, err := db.Open(testCtx(t), db.Config{URL: url, Pooler: db.PoolerPgBouncer})
	if err == nil {
		p.Close()
		t.Fatal("Open through PgBouncer on a database without statement_timeout: got nil, want an error")
	}
	if !strings.Contains(err.Error(), "statement_timeout") {
		t.Errorf("error %q does not name statement_timeout", err)
	}
}

// TestPoolerStartChecks: behind a pooler the start reads what only the
// server can set. The server's lock_timeout is the pool's (0 when none: the
// app then warns), and the statement cache (pgbouncer-prepared) is refused,
// naming the fix, on a PgBouncer that does not keep prepared statements
// apart (before 1.21, or max_prepared_statements = 0): served, it
// answered requests with 500s (42P05 "prepared statement already exists",
// 26000 "does not exist").
func TestPoolerStartChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		pooler   db.Pooler
		lock     string        // the database's lock_timeout; "" sets none
		wantLock time.Duration // the pool's LockTimeout
	}{
		{"no lock_timeout on the server", db.PoolerPgBouncer, "", 0},
		{"lock_timeout on the server", db.PoolerPgBouncer, "900ms", 900 * time.Millisecond},
		{"statement cache, prepared statements not kept apart", db.PoolerPgBouncerPrepared, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := dbtest.NewPool(t, "repo", db.Config{MaxConns: 2})
			name := databaseName(t, direct)
			exec(t, direct, fmt.Sprintf(`ALTER DATABASE %q SET statement_timeout = '1s'`, name))
			if tc.lock != "" {
				exec(t, direct, fmt.Sprintf(`ALTER DATABASE %q SET lock_timeout = '%s'`, name, tc.lock))
			}
			url := withDatabase(t, pgbouncer.Start(t, dbtest.AdminURL()), name)
			p, err := db.Open(testCtx(t), db.Config{URL: url, Pooler: tc.pooler, MaxConns: 4})
			if tc.pooler == db.PoolerPgBouncerPrepared {
				// The local PgBouncer keeps no prepared statements apart,
				// whatever its version (pgbouncer.Start).
				if err == nil {
					p.Close()
					t.Fatal("Open with the statement cache through a PgBouncer that keeps no prepared statements apart: got nil, want an error")
				}
				if !strings.Contains(err.Error(), "max_prepared_statements") || !strings.Contains(err.Error(), "DB_POOLER=pgbouncer") {
					t.Errorf("error %q does not name the fix (max_prepared_statements, DB_POOLER=pgbouncer)", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open through PgBouncer: %v", err)
			}
			defer p.Close()
			if got := p.LockTimeout(); got != tc.wantLock {
				t.Errorf("LockTimeout: got %s, want %s (the server's)", got, tc.wantLock)
			}
		})
	}
}

// TestPoolerForgottenIsNamed: DATABASE_URL pointing at PgBouncer without
// DB_POOLER: PgBouncer refuses the pool's start-up settings. The start
// fails at once, naming DB_POOLER, even where it waits for a database
// that does not answer yet: it waited forever, logging PgBouncer's bare
// "unsupported startup parameter".
func TestPoolerForgottenIsNamed(t *testing.T) {
	t.Parallel()
	direct := dbtest.NewPool(t, "repo", db.Config{MaxConns: 2})
	url := withDatabase(t, pgbouncer.Start(t, dbtest.AdminURL()), databaseName(t, direct))
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	waits := 0
	p, err := db.Open(ctx, db.Config{URL: url, Pooler: db.PoolerNone, WaitForServer: func(int, error) { waits++ }})
	if err == nil {
		p.Close()
		t.Fatal("Open through PgBouncer with DB_POOLER unset: got nil, want an error")
	}
	if waits > 0 || !strings.Contains(err.Error(), "DB_POOLER=pgbouncer") {
		t.Errorf("Open through PgBouncer with DB_POOLER unset: waited %d times, then %v; want no wait and an error naming DB_POOLER=pgbouncer", waits, err)
	}
}
