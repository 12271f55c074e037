package repo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// filterLoaded stops the filter's upkeep at cleanup and waits until the
// filter answers (the upkeep loads it in the background).
func filterLoaded(t *testing.T, products *repo.Products, stop func()) {
	t.Helper()
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for !products.FilterLoaded() {
		if time.Now().After(deadline) {
			t.Fatal("the unknown-id filter did not load within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnknownIDFilterNeverMakesARequestWait: while the products table is
// locked (a load that cannot finish, as with a huge catalogue or a slow
// database), turning the filter on returns at once and a cached product is
// served at once: no request waits for the filter, and until it loads every
// id takes the normal path.
func TestUnknownIDFilterNeverMakesARequestWait(t *testing.T) {
	t.Parallel()
	products, _, pool := newProducts(t, db.Config{}, 7)
	ctx := testCtx(t)
	if _, _, err := products.Get(ctx, 7); err != nil { // cached now
		t.Fatal(err)
	}
	// A transaction holds the table locked until release: every query on
	// it, the filter's load included, waits meanwhile.
	locked, unlock, held := make(chan error, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		_ = pool.With(context.Background(), func(conn db.Conn) error {
			tx, err := conn.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, `LOCK TABLE products IN ACCESS EXCLUSIVE MODE`)
				defer func() { _ = tx.Rollback(context.Background()) }()
			}
			locked <- err
			if err == nil {
				<-unlock
			}
			return nil
		})
	}()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() { close(unlock); <-held })
	t.Cleanup(release)

	stop := products.FilterUnknownIDs(5)
	// The lock is held until Get returns (or for the server's idle-in-
	// transaction timeout, seconds): a Get that waited for the filter would
	// return only once the filter had loaded.
	p, _, err := products.Get(ctx, 7)
	loaded := products.FilterLoaded()
	if err != nil || p.ID != 7 {
		t.Fatalf("Get(7) while the filter could not load: %+v, %v", p, err)
	}
	if loaded {
		t.Error("Get(7) returned after the filter had loaded: it waited for the filter")
	}
	release()
	filterLoaded(t, products, stop)
}

// TestUnknownIDFilterSeesRowsInsertedOutsideTheApp: a product inserted
// outside the app with an id of its own, below what the id sequence has
// handed out (so no catch-up looks for it, and no lookup), is found once
// the upkeep's check sees PostgreSQL's insert count ahead of the filter
// and reloads it. The sequence is moved past it as an import does.
func TestUnknownIDFilterSeesRowsInsertedOutsideTheApp(t *testing.T) {
	t.Parallel()
	products, _, pool := newProducts(t, db.Config{})
	ctx := testCtx(t)
	exec(t, pool, `INSERT INTO products (id, name, price_cents) VALUES (5000000, 'high', 1)`)
	exec(t, pool, `SELECT setval(pg_get_serial_sequence('products', 'id'), 5000000)`)
	filterLoaded(t, products, products.FilterUnknownIDsCheckingEvery(1, 200*time.Millisecond))

	exec(t, pool, `INSERT INTO products (id, name, price_cents) VALUES (4000000, 'inserted by hand', 1)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, _, err := products.Get(ctx, 4_000_000)
		if err == nil && p.ID == 4_000_000 {
			return
		}
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get(4000000): %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a product inserted outside the app below the highest id: still not found after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnknownIDFilterFindsAnIDCommittedOutOfOrder: ids are handed out
// before their transactions commit, so a product can commit after one with
// a higher id. When the filter reads the table in between, the lower id is
// below the highest it knows yet missing from it; it must still be found
// (looked up within the budget, or by the catch-up a refusal wakes), not
// answered 404 until the next check of the table.
func TestUnknownIDFilterFindsAnIDCommittedOutOfOrder(t *testing.T) {
	t.Parallel()
	products, _, pool := newProducts(t, db.Config{})
	ctx := testCtx(t)
	var slow int64
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- pool.With(ctx, func(conn db.Conn) error {
			tx, err := conn.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if err := tx.QueryRow(ctx, `INSERT INTO products (name, price_cents) VALUES ('committed late', 1) RETURNING id`).Scan(&slow); err != nil {
				close(held)
				return err
			}
			close(held)
			<-release
			return tx.Commit(ctx)
		})
	}()
	<-held
	fast := queryInt(t, pool, `INSERT INTO products (name, price_cents) VALUES ('committed first', 1) RETURNING id`)
	// Loaded now, it knows fast and not slow; its check of the table is an
	// hour away.
	filterLoaded(t, products, products.FilterUnknownIDsCheckingEvery(1, time.Hour))
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if slow >= fast {
		t.Fatalf("ids %d (late) and %d (first): want the late one lower", slow, fast)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, _, err := products.Get(ctx, slow)
		if err == nil && p.ID == slow {
			return
		}
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get(%d): %v", slow, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("product %d, committed after %d and after the filter loaded: still not found after 5 s", slow, fast)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
