package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-guard/api/migrations"
)

// migrationVersions lists the versions of the embedded migration files.
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: got %v (err %v), want some .sql files", names, err)
	}
	var out []int64
	for _, n := range names {
		v, err := strconv.ParseInt(strings.SplitN(n, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: version: %v", n, err)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// TestMigrateConcurrentStarts starts five instances at the same moment on
// one empty database: goose's advisory lock must let exactly one migrate,
// and all five must serve.
func TestMigrateConcurrentStarts(t *testing.T) {
	t.Parallel()
	const instances = 5
	env := testEnv(t)
	gate := make(chan struct{})
	apps := make([]*instance, instances)
	for i := range apps {
		apps[i] = launchApp(t, env, afterGate(gate))
	}
	close(gate)
	for i, a := range apps {
		base := a.waitListening()
		if resp, raw := call(t, http.MethodGet, base+"/readyz", nil, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("instance %d: /readyz: got %d, want 200; body %s", i, resp.StatusCode, raw)
		}
	}

	conn := dbConn(t, env["DATABASE_URL"])
	if got := scalar(t, conn, `SELECT count(*) FROM products`); got != 1000 {
		t.Errorf("products rows: got %d, want 1000 (seeded once)", got)
	}
	rows, err := conn.Query(context.Background(),
		`SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id`)
	if err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	applied := map[int64]int64{}
	for rows.Next() {
		var v, n int64
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatalf("scan goose_db_version: %v", err)
		}
		applied[v] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	want := migrationVersions(t)
	if got := slices.Sorted(maps.Keys(applied)); !slices.Equal(got, want) {
		t.Errorf("applied versions: got %v, want %v", got, want)
	}
	for v, n := range applied {
		if n != 1 {
			t.Errorf("version %d recorded: got %d times, want once", v, n)
		}
	}
	migrated := 0
	for _, a := range apps {
		migrated += len(a.logs.records("migration applied"))
	}
	if migrated != len(want) {
		t.Errorf("\"migration applied\" lines over all instances: got %d, want %d", migrated, len(want))
	}

	for i, a := range apps {
		if err := a.stop(); err != nil {
			t.Errorf("instance %d: run returned %v, want nil", i, err)
		}
	}
}

// TestMigrateOutlivesRequestStatementTimeout: DB_STATEMENT_TIMEOUT bounds
// requests, not migrations or the seed. With a tight (valid) value, the
// migrations and `api seed` (50 000 orders in one statement) still run.
func TestMigrateOutlivesRequestStatementTimeout(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["DB_STATEMENT_TIMEOUT"] = "200ms"
	base, _ := startApp(t, env)
	if resp, raw := call(t, http.MethodGet, base+"/readyz", nil, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: got %d, want 200; body %s", resp.StatusCode, raw)
	}
	var out bytes.Buffer
	if err := command(context.Background(), []string{"seed"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("api seed with DB_STATEMENT_TIMEOUT=200ms: %v\n%s", err, out.String())
	}
	conn := dbConn(t, env["DATABASE_URL"])
	if got := scalar(t, conn, `SELECT count(*) FROM orders`); got < 50000 {
		t.Errorf("seeded orders: got %d, want at least 50000", got)
	}
}
