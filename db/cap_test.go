package db_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stampede-guard/api/db"
)

// TestQueueCapAtThePool: a class's queue cap (SHED_MAX_WAITING and the
// caps derived from it) refuses only a caller that would have to queue. A
// cap of 0 means "never queue", not "never serve": callers that find a
// connection free are served, however many arrive together, and one that
// finds every connection taken is refused at once.
func TestQueueCapAtThePool(t *testing.T) {
	t.Parallel()
	const conns = 4
	pool := openPool(t, db.Config{MaxConns: conns})
	tests := []struct {
		name    string
		cap     int64
		callers int
		full    bool // every connection taken while they call
		want    error
	}{
		{"a cap of 0, connections free", 0, conns, false, nil},
		{"a cap of 1, connections free", 1, conns, false, nil},
		{"a cap of 0, every connection taken", 0, 1, true, db.ErrSaturated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := db.WithClass(t.Context(), &db.Class{MaxWaiting: tc.cap, Capped: true})
			if tc.full {
				defer pool.Occupy()()
			}
			errs := make([]error, tc.callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range tc.callers {
				wg.Go(func() {
					<-start
					errs[i] = pool.With(ctx, func(c db.Conn) error {
						_, err := c.Exec(ctx, "SELECT pg_sleep(0.02)")
						return err
					})
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, tc.want) { // errors.Is(err, nil) is err == nil
					t.Errorf("caller %d of %d: got %v, want %v", i+1, tc.callers, err, tc.want)
				}
			}
		})
	}
}

// TestQueuedLeavesOutAdmittedCallers: Queued, what the door compares with
// a class's cap, is the gate's queue only. Four callers looping on four
// connections never queue, so a door at a cap of 1 must never see one;
// Waiting, which counts callers for the instant pgxpool hands them their
// connection, showed one in 3 to 38 checks of 2 000 here (169 beside a
// busy test run), and the door reading it refused reports and orders
// while connections were free.
func TestQueuedLeavesOutAdmittedCallers(t *testing.T) {
	t.Parallel()
	const conns, rounds = 4, 500
	pool := openPool(t, db.Config{MaxConns: conns})
	ctx := db.WithClass(t.Context(), &db.Class{Priority: db.Low, MaxWaiting: 1, Capped: true})
	var seen, failed atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for range rounds {
				if pool.Queued() >= 1 {
					seen.Add(1)
				}
				if err := pool.With(ctx, func(c db.Conn) error {
					_, err := c.Exec(ctx, "SELECT 1")
					return err
				}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := seen.Load(); n > 0 {
		t.Errorf("a queue seen %d times in %d checks by %d callers on %d connections, want never (a door at a cap of 1 refused them)", n, conns*rounds, conns, conns)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d calls failed, want none", n, conns*rounds)
	}
}
