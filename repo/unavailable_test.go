package repo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestProductsListFailsFastOnSaturatedPool holds the pool's only connection:
// List must give up after the acquire timeout with ErrUnavailable, not queue.
func TestProductsListFailsFastOnSaturatedPool(t *testing.T) {
	t.Parallel()
	const acquireTimeout = 100 * time.Millisecond
	products, _, pool := newProducts(t, db.Config{MaxConns: 1, AcquireTimeout: acquireTimeout})

	release := holdOnlyConn(t, pool)
	start := time.Now()
	_, err := products.List(testCtx(t), 0, 10)
	elapsed := time.Since(start)
	release()

	if !errors.Is(err, repo.ErrUnavailable) {
		t.Errorf("List on a saturated pool: got error %v, want ErrUnavailable", err)
	}
	if !errors.Is(err, db.ErrAcquireTimeout) {
		t.Errorf("List on a saturated pool: got error %v, want it to wrap db.ErrAcquireTimeout", err)
	}
	if got := repo.RetryAfter(err); got != time.Second {
		t.Errorf("RetryAfter: got %v, want 1s", got)
	}
	// A logical bound, not a performance target: it waited for the acquire
	// timeout and no longer.
	if elapsed < acquireTimeout || elapsed > time.Second {
		t.Errorf("List returned after %v, want between %v and 1s", elapsed, acquireTimeout)
	}

	// The connection is back: the same call now succeeds.
	page, err := products.List(testCtx(t), 0, 10)
	if err != nil {
		t.Fatalf("List after release: got error %v, want nil", err)
	}
	if len(page.Items) != 10 {
		t.Errorf("List after release: got %d items, want 10", len(page.Items))
	}
}

// holdOnlyConn takes the pool's only connection, as another caller would,
// and keeps it until release is called (at the latest when the test ends).
func holdOnlyConn(t *testing.T, pool *db.Pool) (release func()) {
	t.Helper()
	return holdConn(t, pool, func(context.Context, db.Conn) (func() error, error) {
		return func() error { return nil }, nil
	})
}
