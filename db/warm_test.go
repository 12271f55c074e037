package db_test

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// warmQuery is a statement the warm-path tests prepare and run.
const warmQuery = `SELECT $1::int + 1`

// openCounted opens a one-connection pool through a proxy that counts the
// chunks the client sends (each one a round trip: a ping, a prepare, a
// query), on a fresh database.
func openCounted(t *testing.T, cfg db.Config) (*db.Pool, *atomic.Int64) {
	t.Helper()
	var sends atomic.Int64
	proxy, err := netproxy.New(hostOf(t, dbtest.AdminURL()), netproxy.Options{Observe: func() func([]byte) {
		return func([]byte) { sends.Add(1) }
	}})
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(proxy.Close)
	u, err := url.Parse(dbtest.NewDatabase(t, "warm"))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	cfg.URL, cfg.MaxConns = u.String(), 1
	return openPoolAt(t, cfg), &sends
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func runWarmQuery(t *testing.T, pool *db.Pool) error {
	t.Helper()
	return pool.With(t.Context(), func(conn db.Conn) error {
		var n int
		return conn.QueryRow(t.Context(), warmQuery, 41).Scan(&n)
	})
}

// TestColdLoadIsOneRoundTrip: a prepared statement's first run on a
// connection idle for more than a second (pgx's default would ping it, then
// prepare the statement: three round trips) sends exactly one message
// batch to the server.
func TestColdLoadIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	pool, sends := openCounted(t, db.Config{Prepare: []string{warmQuery}})
	time.Sleep(1200 * time.Millisecond) // idle past pgx's default ping threshold
	before := sends.Load()
	if err := runWarmQuery(t, pool); err != nil {
		t.Fatal(err)
	}
	if n := sends.Load() - before; n != 1 {
		t.Fatalf("the first query after an idle second took %d round trips, want 1 (no ping, no prepare)", n)
	}
}

// TestPrepareSkipsMissingTables: a statement the server rejects at connect
// (its table is not migrated yet) does not stop the pool from opening; it
// is prepared at first use instead.
func TestPrepareSkipsMissingTables(t *testing.T) {
	t.Parallel()
	pool, _ := openCounted(t, db.Config{Prepare: []string{`SELECT id FROM not_migrated_yet WHERE id = $1`, warmQuery}})
	if err := runWarmQuery(t, pool); err != nil {
		t.Fatal(err)
	}
}

// TestClosedIdleConnectionReplaced: a connection the server closed while it
// sat idle (a restart, pg_terminate_backend) is noticed before it is handed
// out, without a ping, and replaced: the caller's query succeeds.
func TestClosedIdleConnectionReplaced(t *testing.T) {
	t.Parallel()
	pool, _ := openCounted(t, db.Config{})
	var pid int32
	if err := pool.With(t.Context(), func(conn db.Conn) error {
		return conn.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid)
	}); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(t.Context(), dbtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // idle long enough to be checked on acquire
	if err := runWarmQuery(t, pool); err != nil {
		t.Fatalf("query on a pool whose idle connection was terminated: %v", err)
	}
}

// TestPreparedStatementSurvivesSchemaChange: a statement prepared at
// connect whose result type a migration changes fails once on its
// connection ("cached plan must not change result type"), as pgx's own
// statement cache would, and the connection is replaced: the next call
// succeeds instead of failing for as long as the connection lives.
func TestPreparedStatementSurvivesSchemaChange(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t, "plan")
	setup, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close(context.Background())
	if _, err := setup.Exec(t.Context(), `CREATE TABLE items (id int PRIMARY KEY, n int); INSERT INTO items VALUES (1, 7)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT n FROM items WHERE id = $1`
	pool := openPoolAt(t, db.Config{URL: url, MaxConns: 1, Prepare: []string{q}})
	read := func() error {
		return pool.With(t.Context(), func(conn db.Conn) error {
			var n int64
			return conn.QueryRow(t.Context(), q, 1).Scan(&n)
		})
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(t.Context(), `ALTER TABLE items ALTER COLUMN n TYPE bigint`); err != nil {
		t.Fatal(err)
	}
	_ = read() // may fail once: the plan prepared before the change
	for i := range 3 {
		if err := read(); err != nil {
			t.Fatalf("read %d after the schema change: %v", i+2, err)
		}
	}
}
