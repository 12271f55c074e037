package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/pgfailover"
)

// failoverFind bounds how long the app may take to place orders again
// after the promotion: the main pool's breaker probes 0.4, 1.1, 2.6 s…
// after it opened (the primary died ~1 s before the promotion), plus a
// connect, with a margin for a loaded 2-core machine.
const failoverFind = 5 * time.Second

// failoverApp starts a primary and its replica, creates the app's
// database through the multi-host URL (what `api createdb` does) and
// starts the app on it with env's overrides.
func failoverApp(t *testing.T, opts pgfailover.Options, env func(pair *pgfailover.Pair, dbName string) map[string]string) (*pgfailover.Pair, string, string) {
	t.Helper()
	pair := pgfailover.Start(t, opts)
	dbName := "stampede_failover"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := command(ctx, []string{"createdb"}, envOf(map[string]string{"DATABASE_URL": pair.URL(dbName)}), &out); err != nil {
		t.Fatalf("createdb on the multi-host URL: %v", err)
	}
	// The replica replays CREATE DATABASE a moment later (asynchronously,
	// unless the pair is synchronous); a reports pool opened before that
	// gets "database does not exist", on which pgx tries no other host.
	dbtest.WaitFor(t, "the replica to have the new database", func() bool {
		c, err := pgx.Connect(ctx, pair.ReplicaURL(dbName))
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	})
	base, _ := startApp(t, testEnv(t, map[string]string{"REQUEST_TIMEOUT": "4s"}, env(pair, dbName)))
	return pair, dbName, base
}

// TestFailoverFindsNewPrimary: under a light load of orders and reads of
// cached products, the primary is killed and its synchronous replica
// promoted. The app, on the multi-host DATABASE_URL with
// target_session_attrs=read-write, places orders again within a few
// seconds of the promotion without a restart; its main breaker is closed
// again; every 201 a client got is one row on the new primary (none lost,
// none twice, stock decremented once per order); cached reads were served
// throughout; nothing answered 500.
func TestFailoverFindsNewPrimary(t *testing.T) {
	pair, dbName, base := failoverApp(t, pgfailover.Options{Synchronous: true},
		func(p *pgfailover.Pair, db string) map[string]string {
			return map[string]string{"DATABASE_URL": p.URL(db)}
		})
	cached := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, id := range cached {
		if a := timedGet(fmt.Sprintf("%s/products/%d", base, id)); a.status != http.StatusOK {
			t.Fatalf("warm GET /products/%d: %d %v", id, a.status, a.err)
		}
	}
	load := newFailoverLoad(base, "failover-"+dbtest.Unique(), cached)
	load.start(3, 2)
	stopped := false
	defer func() {
		if !stopped {
			load.end()
		}
	}()
	dbtest.WaitFor(t, "orders placed before the failover", func() bool { return load.createdCount() >= 5 })

	pair.KillPrimary()
	killed := time.Now()
	time.Sleep(time.Second) // what a managed database's detection takes, shortened
	pair.Promote()
	promoted := time.Now()
	dbtest.WaitFor(t, "an order placed on the new primary", func() bool { return !load.firstCreatedAfter(promoted).IsZero() })
	found := load.firstCreatedAfter(promoted).Sub(promoted)
	t.Logf("primary killed; promoted %s later; first 201 %s after the promotion",
		promoted.Sub(killed).Round(time.Millisecond), found.Round(time.Millisecond))
	if found > failoverFind {
		t.Errorf("first order after the promotion: %s, want within %s", found.Round(time.Millisecond), failoverFind)
	}
	dbtest.WaitFor(t, "main breaker closed", func() bool { return breakerState(t, base, "postgres_main") == "closed" })
	time.Sleep(500 * time.Millisecond) // a little load on the new primary
	load.end()
	stopped = true

	checkOrders(t, pair.URL(dbName), load)
	if n := load.orderAns[http.StatusInternalServerError]; n > 0 {
		t.Errorf("POST /orders answered 500 %d times (answers %v)", n, load.orderAns)
	}
	if len(load.readFails) > 0 {
		t.Errorf("%d of %d reads of cached products failed, first: %s", len(load.readFails), load.reads, load.readFails[0])
	}
	t.Logf("orders: %d created, answers %v; %d cached reads", len(load.created), load.orderAns, load.reads)
}

// checkOrders compares what the buyers were told with the new primary's
// rows: each 201 is one row with the id it named, no other row carries
// the load's keys, and stock went down once per order.
func checkOrders(t *testing.T, url string, load *failoverLoad) {
	t.Helper()
	if len(load.gaveUp) > 0 {
		t.Errorf("%d orders never got a 201 in 30 s of retries, first %s", len(load.gaveUp), load.gaveUp[0])
	}
	conn := dbConn(t, url)
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT idempotency_key, id FROM orders WHERE idempotency_key LIKE $1 || '-%'`, load.prefix)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for rows.Next() {
		var key string
		var id int64
		if err := rows.Scan(&key, &id); err != nil {
			t.Fatal(err)
		}
		stored[key] = id
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for key, id := range load.created {
		if got, ok := stored[key]; !ok || got != id {
			t.Errorf("order %s: the client got 201 id %d, the new primary has %d (present %v): lost", key, id, got, ok)
		}
	}
	for key := range stored {
		if _, ok := load.created[key]; !ok {
			t.Errorf("order %s is on the new primary but no client got its 201", key)
		}
	}
	var sold int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(1000 - stock), 0) FROM products WHERE id = ANY($1)`, orderProducts).Scan(&sold); err != nil {
		t.Fatal(err)
	}
	if sold != len(load.created) {
		t.Errorf("stock sold: %d, want %d (one per order)", sold, len(load.created))
	}
}

// breakerState is the state /readyz reports for the named breaker.
func breakerState(t *testing.T, base, name string) string {
	t.Helper()
	resp, b, err := send(http.MethodGet, base+"/readyz", nil, "")
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	breakers, _ := decodeObject(t, b)["breakers"].(map[string]any)
	one, _ := breakers[name].(map[string]any)
	s, _ := one["state"].(string)
	return s
}

// TestReportsOnReplicaFallBackToPrimary: with DATABASE_READ_URL on a real
// replica, reports run there (its sessions, none on the primary); once
// the replica is killed they are answered again within a few seconds,
// from the primary, without a restart, and checkout never noticed; the
// move shows in stampede_db_pool_on_fallback.
func TestReportsOnReplicaFallBackToPrimary(t *testing.T) {
	pair, dbName, base := failoverApp(t, pgfailover.Options{},
		func(p *pgfailover.Pair, db string) map[string]string {
			return map[string]string{"DATABASE_URL": p.URL(db), "DATABASE_READ_URL": p.ReplicaURL(db)}
		})
	report := base + "/reports/top-products"
	// The replica is asynchronous: the migrations' tables reach it a
	// moment after the app turned ready, and a report before that is a
	// 500 ("relation does not exist"), which the contract check refuses.
	// Wait for the newest migration's table there first.
	dbtest.WaitFor(t, "the migrations to reach the replica", func() bool {
		var there bool
		err := dbConn(t, pair.ReplicaURL(dbName)).QueryRow(context.Background(),
			`SELECT to_regclass('public.`+newestTable+`') IS NOT NULL`).Scan(&there)
		return err == nil && there
	})
	dbtest.WaitFor(t, "a report answered from the replica", func() bool { return timedGet(report).status == http.StatusOK })
	if got := reportsSessions(t, pair.ReplicaURL(dbName)); got == 0 {
		t.Error("no reports session on the replica after a report")
	}
	if got := reportsSessions(t, pair.PrimaryURL(dbName)); got != 0 {
		t.Errorf("%d reports sessions on the primary while the replica is up, want 0", got)
	}
	const onFallback = `stampede_db_pool_on_fallback{pool="reports"}`
	if v, ok := scrape(t, base)[onFallback]; !ok || v != 0 {
		t.Errorf("%s = %v (exported: %t) on the replica, want 0", onFallback, v, ok)
	}

	pair.KillReplica()
	killed := time.Now()
	var last answer
	dbtest.WaitFor(t, "a report answered with the replica gone", func() bool {
		last = timedGet(report)
		return last.status == http.StatusOK
	})
	t.Logf("reports answered again %s after the replica died", time.Since(killed).Round(time.Millisecond))
	if took := time.Since(killed); took > failoverFind {
		t.Errorf("reports back after %s, want within %s", took.Round(time.Millisecond), failoverFind)
	}
	if got := reportsSessions(t, pair.PrimaryURL(dbName)); got == 0 {
		t.Error("no reports session on the primary after the fallback")
	}
	if v := scrape(t, base)[onFallback]; v != 1 {
		t.Errorf("%s = %v on the primary, want 1: the fallback is not silent", onFallback, v)
	}
	resp, b := call(t, http.MethodPost, base+"/orders", map[string]string{"Idempotency-Key": "after-replica-" + dbtest.Unique()}, `{"product_id":7,"quantity":1}`)
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("order with the replica gone: %d %s, want 201", resp.StatusCode, b)
	}
}

// reportsSessions counts the reports pool's sessions on the server of url.
func reportsSessions(t *testing.T, url string) int {
	t.Helper()
	var n int
	err := dbConn(t, url).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'stampede-guard/reports'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
