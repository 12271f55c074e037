package db_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/migrations"
)

// TestMigrateConcurrentInstances starts five instances at once on one empty
// database: the advisory lock must let exactly one apply each migration.
func TestMigrateConcurrentInstances(t *testing.T) {
	t.Parallel()
	const instances = 5
	url := dbtest.NewDatabase(t, "mig")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	pools := make([]*db.Pool, instances)
	for i := range pools {
		p, err := db.Open(ctx, db.Config{URL: url, MaxConns: 2})
		if err != nil {
			t.Fatalf("instance %d: open pool: %v", i, err)
		}
		t.Cleanup(p.Close)
		pools[i] = p
	}

	errs := make([]error, instances)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() {
			<-start
			errs[i] = db.Migrate(ctx, p, migrations.FS, dbtest.Logger(t))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Migrate: got error %v, want nil", i, err)
		}
	}

	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("list migrations: got %v (err %v), want at least one .sql file", files, err)
	}
	var rows, versions, products int64
	err = pools[0].With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx,
			`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`,
		).Scan(&rows, &versions)
	})
	if err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	if rows != int64(len(files)) || versions != int64(len(files)) {
		t.Errorf("applied migrations: got %d rows for %d versions, want each of the %d files once (%v)",
			rows, versions, len(files), files)
	}
	err = pools[0].With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FROM products`).Scan(&products)
	})
	if err != nil {
		t.Fatalf("count products: %v", err)
	}
	if products != 1000 {
		t.Errorf("products: got %d rows, want 1000 (seeded once)", products)
	}
}
