package repo_test

import (
	"encoding/json"
	"strings"
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

// TestCachedPayloadsDecodedStrictly: a payload that encoding/json alone
// would decode into a product — trailing data, a duplicate field (the last
// wins: a 1-cent price), a field name in another case, invalid UTF-8 or a
// lone surrogate in the name — or a product the database could not hold
// (a negative price, an empty or 201-character name) is never served: it
// is refused (counted), deleted and reloaded (one load), and good again
// afterwards.
func TestCachedPayloadsDecodedStrictly(t *testing.T) {
	t.Parallel()
	canonical := func(p repo.Product) string { b, _ := json.Marshal(p); return string(b) }
	tests := []struct {
		name    string
		id      int64
		payload func(real repo.Product) string
	}{
		{"trailing data", 611, func(p repo.Product) string { return canonical(p) + `{"id":1}` }},
		{"duplicate field, last wins", 612, func(p repo.Product) string {
			return strings.TrimSuffix(canonical(p), "}") + `,"price_cents":1}`
		}},
		{"field name in another case", 613, func(p repo.Product) string {
			return strings.Replace(canonical(p), `"price_cents"`, `"Price_Cents"`, 1)
		}},
		{"invalid UTF-8 in the name", 614, func(p repo.Product) string {
			return strings.Replace(canonical(p), `"name":"`, "\"name\":\"\xff", 1)
		}},
		{"lone surrogate in the name", 615, func(p repo.Product) string {
			return strings.Replace(canonical(p), `"name":"`, `"name":"\ud800`, 1)
		}},
		{"negative price", 616, func(p repo.Product) string { p.PriceCents = -5; return canonical(p) }},
		{"empty name", 617, func(p repo.Product) string { p.Name = ""; return canonical(p) }},
		{"201-character name", 618, func(p repo.Product) string { p.Name = strings.Repeat("é", 201); return canonical(p) }},
	}
	var ids []int64
	for _, tc := range tests {
		ids = append(ids, tc.id)
	}
	products, c, pool := newProducts(t, db.Config{})
	forget(t, c, ids...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := seededProduct(t, pool, tc.id)
			if err := c.Set(testCtx(t), repo.Key(tc.id), []byte(tc.payload(want))); err != nil {
				t.Fatalf("plant the entry: %v", err)
			}
			refused := products.RefusedEntries()
			get(t, products, c, tc.id, want, cache.Miss, 1) // reloaded, not served
			get(t, products, c, tc.id, want, cache.Hit, 0)  // and good again
			if products.RefusedEntries() != refused+1 {
				t.Errorf("refused entries: %d more, want 1", products.RefusedEntries()-refused)
			}
		})
	}
}
