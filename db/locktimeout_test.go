package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestRowLockWaitIsNotAnOutage: statements that wait for a row another
// transaction holds (an admin's long edit, a batch job) end just before
// statement_timeout as lock timeouts, which the breaker does not count: a
// statement on another row still runs after as many of them as open the
// breaker. Ended by statement_timeout they read as a server too slow to
// answer, the breaker opened, and every statement after it was refused.
func TestRowLockWaitIsNotAnOutage(t *testing.T) {
	t.Parallel()
	const statement = 400 * time.Millisecond
	url := dbtest.NewDatabase(t, "db")
	pool := openPoolAt(t, db.Config{URL: url, MaxConns: 4, StatementTimeout: statement,
		Breaker: breaker.Config{Failures: 2, OpenMin: time.Minute}})
	ctx := context.Background()
	exec := func(sql string) error {
		return pool.With(ctx, func(c db.Conn) error {
			_, err := c.Exec(ctx, sql)
			return err
		})
	}
	if err := exec(`CREATE TABLE rows (id int PRIMARY KEY, n int); INSERT INTO rows VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatalf("setup: %v", err)
	}
	// Another session holds row 1 for the whole test.
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT id FROM rows WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	for i := range 3 { // more than Failures
		start := time.Now()
		err := exec(`UPDATE rows SET n = n + 1 WHERE id = 1`)
		took := time.Since(start)
		if !db.IsLockTimeout(err) || db.IsOutage(err) {
			t.Fatalf("update %d of the held row: got %v after %s, want a lock timeout, not an outage", i, err, took.Round(time.Millisecond))
		}
		if took >= statement {
			t.Errorf("update %d ended after %s, want before the %s statement timeout", i, took.Round(time.Millisecond), statement)
		}
	}
	if s := pool.Breaker(); s.State != breaker.Closed || s.Failures != 0 {
		t.Errorf("after 3 lock timeouts: breaker %s with %d failures, want closed with 0", s.State, s.Failures)
	}
	if err := exec(`UPDATE rows SET n = n + 1 WHERE id = 2`); err != nil {
		t.Errorf("update of another row: %v, want it to run", err)
	}
}
