package repo_test

import (
	"fmt"
	"testing"

	"github.com/stampede-guard/api/db"
)

// TestProductsListWalksPages follows NextAfter from the start: pages of 7
// must cover ids 1, 2, 3, ... in order, with no gap and no duplicate.
func TestProductsListWalksPages(t *testing.T) {
	t.Parallel()
	products, _, _ := newProducts(t, db.Config{})
	const pageSize, walk = 7, 50

	var after int64
	var seen []int64
	for len(seen) < walk {
		page, err := products.List(testCtx(t), after, pageSize)
		if err != nil {
			t.Fatalf("List(after=%d, limit=%d): %v", after, pageSize, err)
		}
		if len(page.Items) != pageSize {
			t.Fatalf("List(after=%d, limit=%d): got %d items, want %d", after, pageSize, len(page.Items), pageSize)
		}
		last := page.Items[len(page.Items)-1].ID
		if page.NextAfter == nil || *page.NextAfter != last {
			t.Fatalf("List(after=%d) NextAfter: got %v, want %d (the last id of the page)", after, ptrString(page.NextAfter), last)
		}
		for _, p := range page.Items {
			seen = append(seen, p.ID)
		}
		after = *page.NextAfter
	}
	for i, id := range seen[:walk] {
		if want := int64(i + 1); id != want {
			t.Fatalf("item %d of the walk: got id %d, want %d (ids so far %v)", i, id, want, seen[:i+1])
		}
	}
}

// TestProductsListLastPage checks the edges of the last page.
func TestProductsListLastPage(t *testing.T) {
	t.Parallel()
	products, _, _ := newProducts(t, db.Config{})

	tests := []struct {
		name      string
		after     int64
		limit     int
		wantFirst int64
		wantLen   int
		wantNext  *int64
	}{
		{"short last page", 990, 20, 991, 10, nil},
		{"page that ends exactly at the last id", 993, 7, 994, 7, nil},
		{"one before the end", 992, 7, 993, 7, ptr(999)},
		{"past the end", 1000, 5, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := products.List(testCtx(t), tt.after, tt.limit)
			if err != nil {
				t.Fatalf("List(after=%d, limit=%d): %v", tt.after, tt.limit, err)
			}
			if len(page.Items) != tt.wantLen {
				t.Fatalf("items: got %d, want %d", len(page.Items), tt.wantLen)
			}
			for i, p := range page.Items {
				if want := tt.wantFirst + int64(i); p.ID != want {
					t.Errorf("item %d: got id %d, want %d", i, p.ID, want)
				}
				if p.Name == "" || p.PriceCents <= 0 {
					t.Errorf("item %d: got %+v, want a name and a positive price", i, p)
				}
			}
			if got, want := ptrString(page.NextAfter), ptrString(tt.wantNext); got != want {
				t.Errorf("NextAfter: got %s, want %s", got, want)
			}
			if page.Items == nil {
				t.Errorf("Items: got nil, want an empty slice (JSON [] rather than null)")
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }

func ptrString(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
