package repo_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestProductsUpdateIfMatch checks conditional writes: the precondition
// (the handlers' If-Match) is asked about the product as it is now, only
// its yes lets an update through, and a refused one changes nothing.
func TestProductsUpdateIfMatch(t *testing.T) {
	t.Parallel()
	const id, absent = 401, 999997
	products, _, pool := newProducts(t, db.Config{}, id, absent)

	always := func(repo.Product) bool { return true }
	tests := []struct {
		name string
		id   int64
		// precondition is the update's, given the product the editor read.
		precondition func(read repo.Product) func(current repo.Product) bool
		wantErr      error
	}{
		{"current version", id, func(read repo.Product) func(repo.Product) bool {
			return func(cur repo.Product) bool { return cur == read }
		}, nil},
		{"any version (If-Match: *)", id, func(repo.Product) func(repo.Product) bool { return always }, nil},
		{"old version", id, func(read repo.Product) func(repo.Product) bool {
			return func(cur repo.Product) bool { return cur.UpdatedAt.Before(read.UpdatedAt) }
		}, repo.ErrPreconditionFailed},
		{"absent product", absent, func(repo.Product) func(repo.Product) bool { return always }, repo.ErrPreconditionAbsent},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := seededProduct(t, pool, id)
			in := repo.ProductUpdate{Name: "edit " + tt.name, PriceCents: int64(i + 1), Precondition: tt.precondition(before)}
			got, err := products.Update(testCtx(t), tt.id, in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Update: got error %v, want %v", err, tt.wantErr)
			}
			after := seededProduct(t, pool, id)
			if tt.wantErr != nil {
				if after != before {
					t.Errorf("a refused update changed the row: %+v -> %+v", before, after)
				}
				return
			}
			if got != after || after.Name != in.Name {
				t.Errorf("Update returned %+v; row is %+v; want the row with name %q", got, after, in.Name)
			}
			if !got.UpdatedAt.After(before.UpdatedAt) {
				t.Errorf("version not moved by an update: %s, was %s", got.UpdatedAt, before.UpdatedAt)
			}
		})
	}
}

// TestProductsIfMatchOneEditorWins sends many concurrent updates that all
// require the version they read: exactly one may win, the rest get
// ErrPreconditionFailed.
func TestProductsIfMatchOneEditorWins(t *testing.T) {
	t.Parallel()
	const id, editors = 402, 20
	products, _, pool := newProducts(t, db.Config{MaxConns: editors}, id)
	read := seededProduct(t, pool, id)
	unchanged := func(cur repo.Product) bool { return cur == read }

	errs := make([]error, editors)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range editors {
		wg.Go(func() {
			<-start
			_, errs[i] = products.Update(testCtx(t), id, repo.ProductUpdate{
				Name: "editor", PriceCents: int64(100 + i), Precondition: unchanged,
			})
		})
	}
	close(start)
	wg.Wait()

	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, repo.ErrPreconditionFailed):
			t.Errorf("editor %d: got error %v, want nil or ErrPreconditionFailed", i, err)
		}
	}
	if won != 1 {
		t.Errorf("editors that won: got %d, want exactly 1", won)
	}
}
