package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/pgbouncer"
)

// TestAppBehindPgBouncer: the binary with DB_POOLER=pgbouncer migrates on
// DATABASE_DIRECT_URL, then serves product reads, idempotent checkouts and
// reports through PgBouncer in transaction pooling. The database sets a
// statement_timeout and no lock_timeout: the start warns that one held row
// would then open the breaker.
func TestAppBehindPgBouncer(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	direct := env["DATABASE_URL"]
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	name := conn.Config().Database
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q SET statement_timeout = '3s'`, name)); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	u, err := url.Parse(pgbouncer.Start(t, dbtest.AdminURL()))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	env["DATABASE_URL"], env["DATABASE_DIRECT_URL"], env["DB_POOLER"] = u.String(), direct, "pgbouncer"
	a := launchApp(t, env)
	base := a.waitListening()
	if n := len(a.logs.records("behind a pooler PostgreSQL sets no lock_timeout: a write that waits for a row another transaction holds ends at statement_timeout, which the breaker counts as an outage, so one held row can refuse every order; set lock_timeout beside statement_timeout (connect_query in pgbouncer.ini, or ALTER ROLE … SET lock_timeout)")); n != 1 {
		t.Errorf("%d warnings that the server sets no lock_timeout, want 1", n)
	}

	for range 3 {
		if resp, body := call(t, "GET", base+"/products/7", nil, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /products/7: got %d %s, want 200", resp.StatusCode, body)
		}
	}
	key := map[string]string{"Idempotency-Key": "k-" + dbtest.Unique()}
	var ids []any
	for range 2 {
		resp, body := call(t, "POST", base+"/orders", key, `{"product_id": 7, "quantity": 1}`)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST /orders: got %d %s, want 2xx", resp.StatusCode, body)
		}
		ids = append(ids, decodeObject(t, body)["id"])
	}
	if ids[0] != ids[1] {
		t.Errorf("a retried checkout: got orders %v and %v, want the same", ids[0], ids[1])
	}
	if resp, body := call(t, "GET", base+"/reports/top-products", nil, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /reports/top-products: got %d %s, want 200", resp.StatusCode, body)
	}
}
