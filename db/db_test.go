package db_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestMain fails the package if a test leaves a goroutine behind, such as a
// pool or a migration's database/sql handle that was not closed. No
// goroutine is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openPool opens a pool with cfg on a fresh empty database (no migrations:
// these tests need only a server), closed when the test ends.
func openPool(t *testing.T, cfg db.Config) *db.Pool {
	t.Helper()
	cfg.URL = dbtest.NewDatabase(t, "db")
	return openPoolAt(t, cfg)
}

// openPoolAt opens a pool with cfg, on the database cfg.URL names, closed
// when the test ends.
func openPoolAt(t *testing.T, cfg db.Config) *db.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestStatementTimeout checks that the server cancels a statement that runs
// past the pool's statement_timeout, and only such a statement.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	pool := openPool(t, db.Config{StatementTimeout: 200 * time.Millisecond})

	tests := []struct {
		name        string
		sql         string
		wantTimeout bool
	}{
		{"longer than the timeout", `SELECT pg_sleep(10)`, true},
		{"shorter than the timeout", `SELECT pg_sleep(0.01)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := pool.With(t.Context(), func(conn db.Conn) error {
				_, err := conn.Exec(t.Context(), tt.sql)
				return err
			})
			elapsed := time.Since(start)
			if got := db.IsStatementTimeout(err); got != tt.wantTimeout {
				t.Fatalf("%s: IsStatementTimeout(%v) got %v, want %v", tt.sql, err, got, tt.wantTimeout)
			}
			if !tt.wantTimeout && err != nil {
				t.Fatalf("%s: got error %v, want nil", tt.sql, err)
			}
			// The server stopped the sleep early: 200 ms in, and any time
			// under half the sleep proves it on however loaded a machine.
			if tt.wantTimeout && elapsed >= 5*time.Second {
				t.Errorf("%s: returned after %v, want well under 10s", tt.sql, elapsed)
			}
		})
	}
}

// TestAcquireErrors tells a saturated pool from a caller that gave up.
func TestAcquireErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		acquireTimeout time.Duration
		callerTimeout  time.Duration
		want           error
		notWant        error
	}{
		{"pool saturated", 100 * time.Millisecond, 10 * time.Second, db.ErrAcquireTimeout, context.DeadlineExceeded},
		{"caller gave up first", 10 * time.Second, 100 * time.Millisecond, context.DeadlineExceeded, db.ErrAcquireTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := openPool(t, db.Config{MaxConns: 1, AcquireTimeout: tt.acquireTimeout})
			held, err := pool.Acquire(t.Context())
			if err != nil {
				t.Fatalf("acquire the only connection: %v", err)
			}
			defer held.Release()

			ctx, cancel := context.WithTimeout(t.Context(), tt.callerTimeout)
			defer cancel()
			_, err = pool.Acquire(ctx)
			if !errors.Is(err, tt.want) {
				t.Errorf("Acquire: got error %v, want %v", err, tt.want)
			}
			if errors.Is(err, tt.notWant) {
				t.Errorf("Acquire: got error %v, want it not to be %v", err, tt.notWant)
			}
		})
	}
}

// TestPoolWaitingCountsWaiters parks three callers behind the only
// connection and watches Waiting count them in and out.
func TestPoolWaitingCountsWaiters(t *testing.T) {
	t.Parallel()
	const waiters = 3
	pool := openPool(t, db.Config{MaxConns: 1, AcquireTimeout: 10 * time.Second})
	held, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatalf("acquire the only connection: %v", err)
	}
	if got := pool.Waiting(); got != 0 {
		t.Fatalf("Waiting with the connection held and nobody queued: got %d, want 0", got)
	}

	errs := make([]error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			conn, err := pool.Acquire(t.Context())
			if err == nil {
				conn.Release()
			}
			errs[i] = err
		})
	}
	if !dbtest.Eventually(5*time.Second, func() bool { return pool.Waiting() == waiters }) {
		t.Errorf("Waiting: got %d, want %d", pool.Waiting(), waiters)
	}
	held.Release()
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Errorf("waiter %d: got error %v, want nil", i, err)
		}
	}
	if got := pool.Waiting(); got != 0 {
		t.Errorf("Waiting after everyone was served: got %d, want 0", got)
	}
}

// TestOpenFailures checks that a start fails with a clear error and in
// bounded time: at once for a mistake waiting cannot fix, after a few
// backed-off retries for a server that does not answer.
func TestOpenFailures(t *testing.T) {
	t.Parallel()
	admin, err := url.Parse(dbtest.AdminURL())
	if err != nil {
		t.Fatalf("parse admin url: %v", err)
	}
	noDB, noServer, badParam, badValue := *admin, *admin, *admin, *admin
	noDB.Path = "/no_such_db_stampede"
	noServer.Host = "127.0.0.1:1" // nothing listens on port 1
	// Session settings the server refuses at connect: they waited forever,
	// logged as "database not reachable yet".
	q := badParam.Query()
	q.Set("bogus_param", "1")
	badParam.RawQuery = q.Encode()
	badValue.RawQuery += "&options=-c%20statement_timeout%3Dabc" // %20: "+" would be read as part of the name
	fixed := badValue
	fixed.RawQuery = admin.RawQuery + "&options=-c%20shared_buffers%3D1GB" // only a restart sets it

	tests := []struct {
		name             string
		url              string
		minTime, maxTime time.Duration
	}{
		{"no such database", noDB.String(), 0, time.Second},
		{"unknown session setting", badParam.String(), 0, time.Second},
		{"invalid session setting", badValue.String(), 0, time.Second},
		{"setting only a restart changes", fixed.String(), 0, time.Second},
		// 100+200+400+800 ms of backoff between five attempts.
		{"nothing listening", noServer.String(), 1500 * time.Millisecond, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			pool, err := db.Open(t.Context(), db.Config{URL: tt.url, AcquireTimeout: 200 * time.Millisecond})
			elapsed := time.Since(start)
			if err == nil {
				pool.Close()
				t.Fatal("Open: got nil error, want a failure")
			}
			if elapsed < tt.minTime || elapsed > tt.maxTime {
				t.Errorf("Open failed after %v, want between %v and %v (err: %v)", elapsed, tt.minTime, tt.maxTime, err)
			}
		})
	}
}

// TestTinyAcquireTimeoutStillConnects opens a pool whose acquire and
// statement timeouts are shorter than any connect: the connect keeps a
// time of its own, so the app starts and the pool can dial again later.
// (The connect timeout was 3/4 of the acquire timeout: with
// DB_ACQUIRE_TIMEOUT=10ms no connect ever finished and the start failed
// after five attempts; and the start's ping had only acquire + statement,
// 10 ms with REQUEST_TIMEOUT=20ms.)
func TestTinyAcquireTimeoutStillConnects(t *testing.T) {
	t.Parallel()
	pool := openPool(t, db.Config{MaxConns: 2, AcquireTimeout: time.Millisecond, StatementTimeout: time.Millisecond})
	pool.Reset() // the next ping must dial a new connection
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// A backend descheduled for a millisecond (a loaded machine) cancels
	// even the ping's empty statement: that is the 1 ms statement timeout
	// at work, not a failed connect, so it is tried again. So is a connect
	// that outlived its own 250 ms (minConnectTimeout) while four CPU
	// burners starved a CI run's new backend: with the connect bounded by
	// the 1 ms acquire timeout instead, no attempt would ever connect.
	var err error
	for range 5 {
		err = pool.Ping(ctx)
		if !db.IsStatementTimeout(err) && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
			break
		}
	}
	if err != nil {
		t.Fatalf("ping after a reset, acquire timeout 1ms: %v, want a fresh connection", err)
	}
}

// TestCheckSizing sets fleets against the real server's max_connections.
func TestCheckSizing(t *testing.T) {
	t.Parallel()
	pool := openPool(t, db.Config{MaxConns: 1})
	var maxConns, reserved int
	err := pool.With(t.Context(), func(conn db.Conn) error {
		return conn.QueryRow(t.Context(), `SELECT current_setting('max_connections')::int,
			current_setting('superuser_reserved_connections')::int`).Scan(&maxConns, &reserved)
	})
	if err != nil {
		t.Fatalf("read limits: %v", err)
	}
	tests := []struct {
		name   string
		sizing db.Sizing
		wantOK bool
	}{
		{"one small instance", db.Sizing{Instances: 1, PerInstance: 5, Headroom: 5}, true},
		// The seed's example, scaled to this server: more pods than fit.
		{"too many instances", db.Sizing{Instances: maxConns, PerInstance: 10, Headroom: 5}, false},
		{"fits but eats the headroom", db.Sizing{Instances: 1, PerInstance: maxConns - reserved - 2, Headroom: 5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := db.CheckSizing(t.Context(), pool, tt.sizing)
			if err != nil {
				t.Fatalf("CheckSizing: %v", err)
			}
			if r.MaxConnections != maxConns || r.Reserved < reserved {
				t.Errorf("limits: got max %d reserved %d, want %d and at least %d", r.MaxConnections, r.Reserved, maxConns, reserved)
			}
			if got := r.OK(); got != tt.wantOK {
				t.Errorf("OK() = %v, want %v (%s)", got, tt.wantOK, r)
			}
		})
	}
}

// TestAcquireTimeoutHintsDrainTime: a request that timed out waiting for a
// connection is told when the queue will have drained (waiters × average
// hold ÷ connections), not a constant.
func TestAcquireTimeoutHintsDrainTime(t *testing.T) {
	t.Parallel()
	pool := openPool(t, db.Config{MaxConns: 1, AcquireTimeout: 200 * time.Millisecond})
	sleep := func(s float64) error {
		return pool.With(t.Context(), func(conn db.Conn) error {
			_, err := conn.Exec(t.Context(), "SELECT pg_sleep($1)", s)
			return err
		})
	}
	if err := sleep(1.5); err != nil { // the average hold is now 1.5 s
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- sleep(1) }()
	time.Sleep(100 * time.Millisecond) // the only connection is taken
	_, err := pool.Acquire(t.Context())
	var h interface{ RetryHint() time.Duration }
	if !errors.Is(err, db.ErrAcquireTimeout) || !errors.As(err, &h) || h.RetryHint() < 2*time.Second {
		t.Errorf("Acquire: got %v, want ErrAcquireTimeout hinting ≥ 2s (one waiter and one holder of 1.5 s)", err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
