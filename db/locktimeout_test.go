package db_test

import (
	"context"
	"sync"
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
	// Two writers at once (two places per row, or two instances): the
	// second waits for the row's queue (the first holds its tuple lock),
	// then for the row, and lock_timeout applies to each wait. At 9/10 of
	// the statement timeout its second wait ended as a statement timeout,
	// an outage.
	for round := range 2 {
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for w := range errs {
			wg.Go(func() {
				time.Sleep(time.Duration(w) * 20 * time.Millisecond) // the first in the queue first
				errs[w] = exec(`UPDATE rows SET n = n + 1 WHERE id = 1`)
			})
		}
		wg.Wait()
		for w, err := range errs {
			if !db.IsLockTimeout(err) || db.IsOutage(err) {
				t.Errorf("round %d, writer %d of two at once: got %v, want a lock timeout, not an outage", round, w, err)
			}
		}
	}
	if s := pool.Breaker(); s.State != breaker.Closed || s.Failures != 0 {
		t.Errorf("after 7 lock timeouts: breaker %s with %d failures, want closed with 0", s.State, s.Failures)
	}
	if err := exec(`UPDATE rows SET n = n + 1 WHERE id = 2`); err != nil {
		t.Errorf("update of another row: %v, want it to run", err)
	}
}
