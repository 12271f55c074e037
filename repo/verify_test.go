package repo_test

import (
	"testing"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestCachedEntriesVerified: a cached payload that does not decode as a
// product, or that is another product, is never served and never a 500: it
// is deleted, the product reloaded from PostgreSQL (one load), and the
// entry is good again afterwards.
func TestCachedEntriesVerified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      int64
		payload string
	}{
		{"not JSON", 601, "\x00garbage"},
		{"another product", 602, `{"id":1,"name":"forged","price_cents":0,"updated_at":"2020-01-01T00:00:00Z"}`},
		{"a JSON array", 603, `[1,2,3]`},
		{"wrong field type", 604, `{"id":604,"name":"x","price_cents":"free"}`},
		{"foreign field", 605, `{"id":605,"name":"x","price_cents":0,"updated_at":"2020-01-01T00:00:00Z","admin":true}`},
	}
	var ids []int64
	for _, tc := range tests {
		ids = append(ids, tc.id)
	}
	products, c, pool := newProducts(t, db.Config{}, ids...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Set(testCtx(t), repo.Key(tc.id), []byte(tc.payload)); err != nil {
				t.Fatalf("plant the entry: %v", err)
			}
			want := seededProduct(t, pool, tc.id)
			get(t, products, c, tc.id, want, cache.Miss, 1) // reloaded, not served
			get(t, products, c, tc.id, want, cache.Hit, 0)  // and good again
		})
	}
}
