package repo_test

import (
	"errors"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestValueRejectedByDatabaseIsInvalid: a value PostgreSQL refuses (here a
// NUL byte in text, SQLSTATE 22021) is the request's fault, ErrInvalid,
// never an outage or an internal error.
func TestValueRejectedByDatabaseIsInvalid(t *testing.T) {
	t.Parallel()
	products, _, _ := newProducts(t, db.Config{})
	_, err := products.Create(testCtx(t), repo.NewProduct{Name: "a\x00b", PriceCents: 1})
	if !errors.Is(err, repo.ErrInvalid) || errors.Is(err, repo.ErrUnavailable) {
		t.Fatalf("got %v, want ErrInvalid (and not ErrUnavailable)", err)
	}
}
