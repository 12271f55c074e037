package repo

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestCommitNeedsRoomForItsAnswer: over a link that takes 100 ms each way
// to the server, a transaction whose body leaves 50 ms of the request's
// deadline is rolled back, not committed: a definite "not applied" (503),
// and no row. Sent, the COMMIT reached the server after the deadline, was
// applied, and its answer never came back: "may or may not have been
// applied" (504) for a write that was. With room left it commits.
func TestCommitNeedsRoomForItsAnswer(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(dbtest.NewDatabase(t, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	link := dbtest.NewProxy(t, u.Host)
	u.Host = link.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := db.Open(ctx, db.Config{URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(func() { link.SetDelay(0) }) // before the pool's Close
	if err := pool.With(ctx, func(c db.Conn) error {
		_, err := c.Exec(ctx, `CREATE TABLE commit_room (name text PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const oneWay = 100 * time.Millisecond
	link.SetDelay(oneWay)

	tests := []struct {
		name      string
		leave     time.Duration // of the deadline, after the body
		committed bool
	}{
		{"no room for the answer", oneWay / 2, false},
		{"room left", 3 * time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			deadline := time.Now().Add(tc.leave + 2*time.Second)
			rctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			err := pool.With(rctx, func(conn db.Conn) error {
				return inTx(rctx, conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(rctx, `INSERT INTO commit_room VALUES ($1)`, tc.name); err != nil {
						return err
					}
					time.Sleep(time.Until(deadline.Add(-tc.leave)))
					return nil
				})
			})
			switch {
			case tc.committed && err != nil:
				t.Fatalf("inTx with %s left: %v, want committed", tc.leave, err)
			case !tc.committed && (!errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown)):
				t.Fatalf("inTx with %s left: %v, want not applied (ErrUnavailable), not an unknown outcome", tc.leave, err)
			}
			var rows int
			if err := pool.With(ctx, func(c db.Conn) error {
				return c.QueryRow(ctx, `SELECT count(*) FROM commit_room WHERE name = $1`, tc.name).Scan(&rows)
			}); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.committed]; rows != want {
				t.Errorf("rows written: %d, want %d", rows, want)
			}
		})
	}
}
