package repo_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestProductsUpdateIfMatch checks conditional writes: only an If-Match
// naming the current version (strongly) lets an update through, and a
// refused one changes nothing.
func TestProductsUpdateIfMatch(t *testing.T) {
	t.Parallel()
	const id, absent = 401, 999997
	products, _, pool := newProducts(t, db.Config{}, id, absent)

	tests := []struct {
		name    string
		id      int64
		tags    func(current repo.Product) []string
		wantErr error
	}{
		{"current etag", id, func(p repo.Product) []string { return []string{p.ETag()} }, nil},
		{"current etag among others", id, func(p repo.Product) []string { return []string{`"nope"`, p.ETag()} }, nil},
		{"any", id, func(repo.Product) []string { return []string{"*"} }, nil},
		{"old etag", id, func(p repo.Product) []string { return []string{`"old"`} }, repo.ErrPreconditionFailed},
		{"weak tag never matches", id, func(p repo.Product) []string { return []string{"W/" + p.ETag()} }, repo.ErrPreconditionFailed},
		{"absent product", absent, func(repo.Product) []string { return []string{"*"} }, repo.ErrPreconditionFailed},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := seededProduct(t, pool, id)
			in := repo.ProductUpdate{Name: "edit " + tt.name, PriceCents: int64(i + 1), IfMatch: tt.tags(before)}
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
			if got.ETag() == before.ETag() {
				t.Errorf("ETag unchanged by an update: %s", got.ETag())
			}
		})
	}
}

// TestProductsIfMatchOneEditorWins sends many concurrent updates that all
// carry the same ETag: exactly one may win, the rest get
// ErrPreconditionFailed.
func TestProductsIfMatchOneEditorWins(t *testing.T) {
	t.Parallel()
	const id, editors = 402, 20
	products, _, pool := newProducts(t, db.Config{MaxConns: editors}, id)
	tag := seededProduct(t, pool, id).ETag()

	errs := make([]error, editors)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range editors {
		wg.Go(func() {
			<-start
			_, errs[i] = products.Update(testCtx(t), id, repo.ProductUpdate{
				Name: "editor", PriceCents: int64(100 + i), IfMatch: []string{tag},
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
