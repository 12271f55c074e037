package db_test

import (
	"errors"
	"sync"
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
				if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Errorf("caller %d of %d: got %v, want %v", i+1, tc.callers, err, tc.want)
				}
			}
		})
	}
}
