package db_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// proxiedURL is the URL of a fresh database (named after prefix) reached
// through a proxy the test can slow down or cut.
func proxiedURL(t *testing.T, prefix string) (string, *netproxy.Proxy) {
	t.Helper()
	proxy := dbtest.NewProxy(t, "127.0.0.1:5432")
	u, err := url.Parse(dbtest.NewDatabase(t, prefix))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	return u.String(), proxy
}

// proxiedPool opens a pool whose link to PostgreSQL the test can cut, with
// a breaker that records its transitions.
func proxiedPool(t *testing.T, cfg breaker.Config) (*db.Pool, *dbtest.Transitions, *netproxy.Proxy) {
	t.Helper()
	dsn, proxy := proxiedURL(t, "brk")
	tr := &dbtest.Transitions{}
	cfg.OnStateChange = tr.Record
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, db.Config{URL: dsn, MaxConns: 4, AcquireTimeout: 500 * time.Millisecond, Breaker: cfg})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, tr, proxy
}

func selectOne(ctx context.Context, pool *db.Pool) error {
	return pool.With(ctx, func(c db.Conn) error {
		var one int
		return c.QueryRow(ctx, "SELECT 1").Scan(&one)
	})
}

// TestBreakerExcludesCallerErrors: with the link cut, a caller that
// cancels and a request shed by the pool's queue limit, arriving between
// outage errors, are neither failures nor successes: they do not reset the
// streak, so the third outage error opens the breaker.
func TestBreakerExcludesCallerErrors(t *testing.T) {
	t.Parallel()
	pool, _, proxy := proxiedPool(t, breaker.Config{Failures: 3, OpenMin: time.Minute})
	proxy.SetDown(true)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	shed := db.WithClass(context.Background(), &db.Class{Capped: true}) // a queue cap of 0
	calls := []struct {
		ctx     context.Context
		want    error
		outage  bool
		context string
		full    bool // every connection taken: the cap of 0 refuses
	}{
		{context.Background(), nil, true, "outage", false},
		{context.Background(), nil, true, "outage", false},
		{cancelled, context.Canceled, false, "cancelled", false},
		{shed, db.ErrSaturated, false, "shed", true},
		{context.Background(), nil, true, "outage", false},
	}
	for i, c := range calls {
		release := func() {}
		if c.full {
			release = pool.Occupy()
		}
		err := selectOne(c.ctx, pool)
		release()
		if c.outage && !db.IsOutage(err) || !c.outage && !errors.Is(err, c.want) {
			t.Fatalf("call %d (%s): got %v", i, c.context, err)
		}
	}
	if s := pool.Breaker().State; s != breaker.Open {
		t.Errorf("after outage, outage, cancelled, shed, outage: got %s, want open (caller-side errors are excluded)", s)
	}
	err := selectOne(context.Background(), pool)
	if !errors.Is(err, db.ErrCircuitOpen) {
		t.Errorf("call while open: got %v, want ErrCircuitOpen", err)
	}
}

// TestBreakerRecoversAtFirstProbe: while PostgreSQL is unreachable the
// breaker probes with backoff (SELECT 1, not user queries); the first probe
// after the link returns closes it, without any user call, and the refusal
// while open carries the time to the next probe.
func TestBreakerRecoversAtFirstProbe(t *testing.T) {
	t.Parallel()
	pool, tr, proxy := proxiedPool(t, breaker.Config{Failures: 2, OpenMin: 50 * time.Millisecond, OpenMax: 400 * time.Millisecond})
	ctx := context.Background()
	if err := selectOne(ctx, pool); err != nil {
		t.Fatalf("query before the cut: %v", err)
	}
	proxy.SetDown(true)
	for range 2 {
		if err := selectOne(ctx, pool); !db.IsOutage(err) {
			t.Fatalf("query on the cut link: got %v, want an outage", err)
		}
	}
	err := selectOne(ctx, pool)
	var refused *db.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, db.ErrCircuitOpen) || refused.RetryAfter > 50*time.Millisecond {
		t.Fatalf("query while open: got %v, want ErrCircuitOpen with RetryAfter ≤ 50ms (the first probe)", err)
	}
	dbtest.WaitFor(t, "3 failed probes", func() bool { return pool.Breaker().FailedProbes >= 3 })
	proxy.SetDown(false)
	back := time.Now()
	dbtest.WaitFor(t, "breaker closed", func() bool { return pool.Breaker().State == breaker.Closed })
	probe, result, ok := tr.FirstProbeAfter(back)
	if !ok || result != breaker.Closed {
		t.Fatalf("first probe after PostgreSQL returned: ended in %s (ok %v), want closed; transitions:%s", result, ok, tr)
	}
	t.Logf("PostgreSQL back → first probe +%s → closed +%s (%d probes in all)",
		probe.Sub(back).Round(time.Millisecond), time.Since(back).Round(time.Millisecond), tr.Probes())
	if err := selectOne(ctx, pool); err != nil {
		t.Errorf("query after recovery: %v", err)
	}
}

// TestBreakerIgnoresRequestErrors: against a healthy PostgreSQL, errors
// about the request (a constraint violation, a missing row, bad SQL, a
// statement the caller's own deadline cut) never open the breaker however
// many come in a row, and a success between outage errors is what resets
// a streak, not them.
func TestBreakerIgnoresRequestErrors(t *testing.T) {
	t.Parallel()
	pool, tr, _ := proxiedPool(t, breaker.Config{Failures: 2, OpenMin: time.Minute})
	ctx := context.Background()
	err := pool.With(ctx, func(c db.Conn) error {
		_, err := c.Exec(ctx, `CREATE TABLE uniq (id int PRIMARY KEY); INSERT INTO uniq VALUES (1)`)
		return err
	})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	requests := []struct {
		name     string
		deadline time.Duration // the caller's own, 0 for none
		sql      string
	}{
		{"unique violation", 0, `INSERT INTO uniq VALUES (1)`},
		{"no rows", 0, `SELECT id FROM uniq WHERE id = 2`},
		{"syntax error", 0, `SELEC 1`},
		{"division by zero", 0, `SELECT 1/0`},
		{"caller's deadline", 50 * time.Millisecond, `SELECT pg_sleep(1)`},
	}
	for range 2 { // each kind twice in a row: a streak of Failures if counted
		for _, r := range requests {
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if r.deadline > 0 {
				rctx, cancel = context.WithTimeout(ctx, r.deadline)
			}
			err := pool.With(rctx, func(c db.Conn) error {
				var id int
				return c.QueryRow(rctx, r.sql).Scan(&id)
			})
			cancel()
			if err == nil || db.IsOutage(err) {
				t.Fatalf("%s: got %v, want a request error", r.name, err)
			}
			if s := pool.Breaker(); s.State != breaker.Closed || s.Failures != 0 {
				t.Fatalf("after %s: got %s with %d failures, want closed with 0; transitions:%s", r.name, s.State, s.Failures, tr)
			}
		}
	}
}

// TestRefusedConnectionIsAnOutage: a server that answers a new connection
// with an error of its own (here 55000, "database is not currently
// accepting connections", as during maintenance or a restore) is as down
// as one that does not answer: the caller hears "retry later" and the
// breaker counts it. Judged by the error's code alone it was a request
// error, so every read answered 500 and the breaker never opened.
func TestRefusedConnectionIsAnOutage(t *testing.T) {
	t.Parallel()
	dsn := dbtest.NewDatabase(t, "refconn")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &dbtest.Transitions{}
	pool, err := db.Open(ctx, db.Config{URL: dsn, MaxConns: 2, AcquireTimeout: 2 * time.Second,
		Breaker: breaker.Config{Failures: 2, OpenMin: time.Minute, OnStateChange: tr.Record}})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(pool.Close)

	admin, err := pgx.Connect(ctx, dbtest.AdminURL())
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	defer admin.Close(context.Background())
	name := pgx.Identifier{strings.TrimPrefix(mustParse(t, dsn).Path, "/")}.Sanitize()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatalf("refuse connections: %v", err)
	}
	t.Cleanup(func() { // before the drop, which dbtest registered first
		_, _ = admin.Exec(context.Background(), "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true")
	})
	pool.Reset() // no connection is kept: the next statement must dial

	for i := range 2 {
		err := selectOne(ctx, pool)
		if err == nil || !db.IsOutage(err) {
			t.Fatalf("statement %d on a database refusing connections: got %v, want an outage", i+1, err)
		}
	}
	if s := pool.Breaker(); s.State != breaker.Open {
		t.Fatalf("after 2 refused connections: breaker %s, want open; transitions:%s", s.State, tr)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return u
}
