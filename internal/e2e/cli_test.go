package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// cli runs one command line of the binary on dbURL and returns its output.
func cli(t *testing.T, dbURL string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": dbtest.RedisURL()}
	err := command(context.Background(), args, func(k string) string { return env[k] }, &out)
	return out.String(), err
}

func mustCLI(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	out, err := cli(t, dbURL, args...)
	if err != nil {
		t.Fatalf("api %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// statusLines maps each migration file to "pending" or an applied time.
func statusLines(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] != "VERSION" {
			got[f[2]] = f[1]
		}
	}
	return got
}

// TestCLIMigrate: status lists every migration pending on an empty
// database; up applies them; down rolls back the last one only; up again
// re-applies it.
func TestCLIMigrate(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t, "climig")
	want := migrationVersions(t)
	// The newest file's state: names start with a fixed-width version.
	last := func(st map[string]string) string { return st[slices.Max(slices.Collect(maps.Keys(st)))] }

	st := statusLines(t, mustCLI(t, dbURL, "migrate", "status"))
	if len(st) != len(want) {
		t.Fatalf("status on an empty database lists %d migrations, want %d: %v", len(st), len(want), st)
	}
	for name, state := range st {
		if state != "pending" {
			t.Errorf("empty database: %s is %q, want pending", name, state)
		}
	}

	mustCLI(t, dbURL, "migrate", "up")
	conn := dbConn(t, dbURL)
	if got := scalar(t, conn, `SELECT count(*) FROM products WHERE id BETWEEN 1 AND 1000`); got != 1000 {
		t.Errorf("after migrate up: products 1..1000: got %d, want 1000", got)
	}
	for name, state := range statusLines(t, mustCLI(t, dbURL, "migrate", "status")) {
		if state == "pending" {
			t.Errorf("after up: %s still pending", name)
		}
	}

	mustCLI(t, dbURL, "migrate", "down")
	st = statusLines(t, mustCLI(t, dbURL, "migrate", "status"))
	pending := 0
	for _, state := range st {
		if state == "pending" {
			pending++
		}
	}
	if pending != 1 || last(st) != "pending" {
		t.Errorf("after down: %d pending (newest %q), want exactly the newest: %v", pending, last(st), st)
	}
	if got := scalar(t, conn, `SELECT count(*) FROM pg_tables WHERE tablename = '`+newestTable+`'`); got != 0 {
		t.Errorf("after down: %s table (the newest migration's) still exists", newestTable)
	}
	mustCLI(t, dbURL, "migrate", "up")
	if last(statusLines(t, mustCLI(t, dbURL, "migrate", "status"))) == "pending" {
		t.Error("after up again: the newest migration is still pending")
	}
}

// TestCLISeed: seed migrates an empty database and adds the demo orders,
// even with a request-sized DB_STATEMENT_TIMEOUT; a second seed adds none.
// The schema migrations alone add products 1..1000 and no order.
func TestCLISeed(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t, "cliseed")
	mustCLI(t, dbURL, "migrate", "up")
	conn := dbConn(t, dbURL)
	if got := scalar(t, conn, `SELECT count(*) FROM orders`); got != 0 {
		t.Errorf("migrations alone: %d orders, want 0 (demo data is seed's)", got)
	}

	out := mustCLI(t, dbURL, "seed")
	if got := scalar(t, conn, `SELECT count(*) FROM orders`); got != 50000 {
		t.Errorf("after seed: %d orders, want 50000\n%s", got, out)
	}
	if !strings.Contains(out, "50000 demo orders added") {
		t.Errorf("seed output %q does not say how many orders it added", out)
	}
	out = mustCLI(t, dbURL, "seed")
	if got := scalar(t, conn, `SELECT count(*) FROM orders`); got != 50000 {
		t.Errorf("after a second seed: %d orders, want still 50000", got)
	}
	if !strings.Contains(out, " 0 demo orders added") {
		t.Errorf("second seed output %q, want 0 added", out)
	}
}

// TestCLIUnknownCommand: anything but the known commands is a usage error,
// with nothing started.
func TestCLIUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"serve"}, {"migrate"}, {"migrate", "sideways"}, {"seed", "now"}} {
		out, err := cli(t, "postgres://127.0.0.1:1/none", args...)
		if err == nil || !strings.Contains(err.Error(), "usage: api [command]") {
			t.Errorf("api %v: got %v, want the usage error", args, err)
		}
		if out != "" {
			t.Errorf("api %v printed %q, want nothing", args, out)
		}
	}
}

// TestMigrateOnStartOff: with MIGRATE_ON_START=false the service never
// touches the schema (by default it migrates: every other test). With a
// migration pending it does not serve: this build's queries need its
// schema (orders answered 500 behind a 200 /readyz). It waits, /readyz 503,
// until `api migrate up` runs, then starts, and with the key that
// migration generated.
//
// newestTable is the table the newest migration creates.
func TestMigrateOnStartOff(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	mustCLI(t, env["DATABASE_URL"], "migrate", "up")
	mustCLI(t, env["DATABASE_URL"], "migrate", "down")
	env["MIGRATE_ON_START"] = "false"
	env["HTTP_ADDR"] = freeAddr(t)
	base := "http://" + env["HTTP_ADDR"]
	a := launchApp(t, env)
	const waiting = "migrations pending: waiting for `api migrate up` before serving (/readyz 503 until then)"
	if !dbtest.Eventually(listenWait, func() bool { return len(a.logs.records(waiting)) > 0 }) {
		t.Fatalf("MIGRATE_ON_START=false one migration behind: no %q line\n%s", waiting, a.logs)
	}
	if recs := a.logs.records(waiting); fmt.Sprint(recs[0]["pending"]) != "[5]" {
		t.Errorf("pending: %v, want [5]", recs[0]["pending"])
	}
	for _, path := range []string{"/readyz", "/products/1", "/orders"} {
		if resp, raw := call(t, "GET", base+path, nil, ""); resp.StatusCode != 503 {
			t.Errorf("GET %s while migrations are pending: %d %s, want 503", path, resp.StatusCode, raw)
		}
	}
	conn := dbConn(t, env["DATABASE_URL"])
	if got := scalar(t, conn, `SELECT count(*) FROM pg_tables WHERE tablename = '`+newestTable+`'`); got != 0 {
		t.Error("MIGRATE_ON_START=false: the pending migration was applied")
	}
	mustCLI(t, env["DATABASE_URL"], "migrate", "up")
	a.waitListening()
	if recs := a.logs.records("migration applied"); len(recs) != 0 {
		t.Errorf("MIGRATE_ON_START=false: %d migrations applied by the service, want 0", len(recs))
	}
	for _, path := range []string{"/readyz", "/products/1"} {
		if resp, raw := call(t, "GET", base+path, nil, ""); resp.StatusCode != 200 {
			t.Errorf("GET %s once migrated: %d %s", path, resp.StatusCode, raw)
		}
	}
	if resp, raw := call(t, "POST", base+"/orders", map[string]string{"Content-Type": "application/json"}, `{"product_id":3,"quantity":1}`); resp.StatusCode != 201 {
		t.Errorf("POST /orders once migrated: %d %s", resp.StatusCode, raw)
	}
}

// TestStartRefusesNoSchema: with MIGRATE_ON_START=false on a database that
// was never migrated, the start refuses, saying what to run. It served
// /readyz 200 and answered every route 500 ("relation does not exist").
func TestStartRefusesNoSchema(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"MIGRATE_ON_START": "false", "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "off",
		"CACHE_SIGNING_KEY": "a configured key of at least 32 bytes"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, envOf(env), &logCapture{})
	if err == nil || !strings.Contains(err.Error(), "api migrate up") {
		t.Fatalf("run on an unmigrated database: got %v, want a refusal saying to run `api migrate up`", err)
	}
	conn := dbConn(t, env["DATABASE_URL"])
	if got := scalar(t, conn, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`); got != 0 {
		t.Errorf("the refused start left %d tables, want none (MIGRATE_ON_START=false touches nothing)", got)
	}
}

// TestNoArgumentsServes: the binary with no argument is the server.
func TestNoArgumentsServes(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["HTTP_ADDR"], env["ADMIN_ADDR"] = "127.0.0.1:0", "off"
	logs := &logCapture{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- command(ctx, nil, func(k string) string { return env[k] }, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("command with no argument returned %v after cancel, want nil", err)
		}
	}()
	if !dbtest.Eventually(listenWait, func() bool { return len(logs.records("listening")) > 0 }) {
		t.Fatalf("command with no argument did not serve:\n%s", logs)
	}
	addr, _ := logs.records("listening")[0]["addr"].(string)
	if resp, raw := call(t, "GET", "http://"+addr+"/healthz", nil, ""); resp.StatusCode != 200 {
		t.Errorf("GET /healthz: %d %s", resp.StatusCode, raw)
	}
}

// TestStartNeedsTheSigningKey: with MIGRATE_ON_START=false, no
// CACHE_SIGNING_KEY and the key's table gone (the migrations say applied),
// the app refuses to start, saying what to do, rather than serve unsigned
// entries.
func TestStartNeedsTheSigningKey(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"MIGRATE_ON_START": "false", "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "off"})
	mustCLI(t, env["DATABASE_URL"], "migrate", "up")
	conn := dbConn(t, env["DATABASE_URL"])
	if _, err := conn.Exec(context.Background(), `DROP TABLE `+newestTable); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, envOf(env), &logCapture{})
	if err == nil || !strings.Contains(err.Error(), "CACHE_SIGNING_KEY") {
		t.Fatalf("run: got %v, want a refusal naming CACHE_SIGNING_KEY", err)
	}
}

// newestTable is created by the newest migration (00005_cache_signing_key.sql): the
// one `migrate down` removes.
const newestTable = "cache_signing_key"

// TestMissingDatabaseSaysCreateDB: a command or the service started on a
// database that does not exist fails with PostgreSQL's error and the
// command that creates it; any other failure carries no such hint.
func TestMissingDatabaseSaysCreateDB(t *testing.T) {
	u, err := url.Parse(dbtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_db_" + dbtest.Unique()
	missing := u.String()
	for _, tc := range []struct {
		name string
		url  string
		args []string
		hint bool
	}{
		{"serve", missing, nil, true},
		{"migrate status", missing, []string{"migrate", "status"}, true},
		{"seed", missing, []string{"seed"}, true},
		{"server down", "postgres://postgres@127.0.0.1:1/none?connect_timeout=1", []string{"migrate", "status"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			env := map[string]string{"DATABASE_URL": tc.url, "REDIS_URL": dbtest.RedisURL(), "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "off"}
			var out bytes.Buffer
			err := command(ctx, tc.args, func(k string) string { return env[k] }, &out)
			if err == nil {
				t.Fatalf("api %v on %s: no error", tc.args, tc.url)
			}
			if got := strings.Contains(err.Error(), "`api createdb` creates it"); got != tc.hint {
				t.Errorf("api %v: hint %v, want %v: %v", tc.args, got, tc.hint, err)
			}
		})
	}
}

// TestMigrateDownWithNothingApplied: rolling back a database with no
// migration applied fails saying so and naming the database, as every
// command's success line does (it said only "no next version found").
func TestMigrateDownWithNothingApplied(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	_, err := cli(t, env["DATABASE_URL"], "migrate", "down")
	if err == nil || !strings.Contains(err.Error(), "nothing to roll back") || !strings.Contains(err.Error(), "migrate down on database") {
		t.Fatalf("api migrate down on a fresh database: got %v, want a failure saying nothing is applied, naming the database", err)
	}
}
