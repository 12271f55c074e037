package e2e

// Helpers of the resilience tests (overload, breaker, redisdown, deadline):
// they degrade a real dependency — a table lock held from a test
// connection, a proxy that cuts the link — and watch the service's answers.

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// proxyDatabase puts a proxy of the test's own in front of env's database
// and points env at it: the test cuts or slows the link through it.
func proxyDatabase(t testing.TB, env map[string]string) *netproxy.Proxy {
	return proxyURL(t, env, "DATABASE_URL")
}

// proxyRedis is proxyDatabase for env's Redis.
func proxyRedis(t testing.TB, env map[string]string) *netproxy.Proxy {
	return proxyURL(t, env, "REDIS_URL")
}

func proxyURL(t testing.TB, env map[string]string, name string) *netproxy.Proxy {
	t.Helper()
	u, err := url.Parse(env[name])
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	link := dbtest.NewProxy(t, u.Host)
	u.Host = link.Addr()
	env[name] = u.String()
	return link
}

// lockTable takes an ACCESS EXCLUSIVE lock on table from a connection of the
// test's own, so every query of the app on that table waits on the server:
// real slow queries holding real pool connections. release (idempotent, also
// run at cleanup) ends the transaction.
func lockTable(t *testing.T, dbURL, table string) (conn *pgx.Conn, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn = dbConn(t, dbURL)
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE")
	}
	if err != nil {
		t.Fatalf("lock table %s: %v", table, err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback(context.Background())
		}
	}
	t.Cleanup(release) // before dbConn's Close: cleanups run last first
	return conn, release
}

// waitLockWaiters waits until n sessions of the app's pool named pool
// ("main", "reports") wait on a lock in conn's database, and fails after 10 s.
func waitLockWaiters(t *testing.T, conn *pgx.Conn, pool string, n int) {
	t.Helper()
	var got int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// conn is inside the lock's transaction, where pg_stat_activity is
		// a snapshot taken once: drop it so each poll sees the present.
		_, err := conn.Exec(context.Background(), "SELECT pg_stat_clear_snapshot()")
		if err == nil {
			err = conn.QueryRow(context.Background(), `
				SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
				"stampede-guard/"+pool).Scan(&got)
		}
		if err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		if got >= n {
			return
		}
	}
	t.Fatalf("sessions of pool %s waiting on a lock: got %d, want %d within 10s", pool, got, n)
}

// answer is one request's outcome.
type answer struct {
	status  int
	header  http.Header
	elapsed time.Duration
	err     error
}

// timedGet is a GET that reports how long it took. Safe in any goroutine.
func timedGet(url string) answer {
	start := time.Now()
	resp, _, err := send(http.MethodGet, url, nil, "")
	a := answer{elapsed: time.Since(start), err: err}
	if err == nil {
		a.status, a.header = resp.StatusCode, resp.Header
	}
	return a
}

// eventually polls try (dbtest.Eventually) until it returns true, and
// fails the test with try's last description of the state after within.
func eventually(t *testing.T, within time.Duration, what string, try func() (bool, string)) {
	t.Helper()
	var state string
	if !dbtest.Eventually(within, func() (ok bool) { ok, state = try(); return ok }) {
		t.Fatalf("%s: not within %s; last: %s", what, within, state)
	}
}
