package repo_test

import (
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/migrations"
	"github.com/stampede-guard/api/repo"
)

// TestReportsTopProducts runs the aggregate over the demo history (`api
// seed`: migrations.DemoOrders), which is skewed towards low ids, so product 1 sells the most. The newest seeded
// order is 90 seconds old, so a window of 0 days holds none.
func TestReportsTopProducts(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "repo", db.Config{Name: "reports", MaxConns: 2})
	if _, err := db.Seed(testCtx(t), pool, migrations.FS, migrations.DemoOrders, dbtest.Logger(t)); err != nil {
		t.Fatalf("seed the demo orders: %v", err)
	}
	reports := repo.NewReports(pool)

	tests := []struct {
		name            string
		days, limit     int
		wantRows        int
		wantFirstProdID int64
	}{
		{"last 30 days", 30, 5, 5, 1},
		{"whole history", 90, 10, 10, 1},
		{"empty window", 0, 5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := reports.TopProducts(testCtx(t), tt.days, tt.limit)
			if err != nil {
				t.Fatalf("TopProducts(%d, %d): %v", tt.days, tt.limit, err)
			}
			if len(rows) != tt.wantRows {
				t.Fatalf("TopProducts(%d, %d): got %d rows, want %d", tt.days, tt.limit, len(rows), tt.wantRows)
			}
			if tt.wantRows == 0 {
				return
			}
			if rows[0].ProductID != tt.wantFirstProdID {
				t.Errorf("got product %d first, want %d", rows[0].ProductID, tt.wantFirstProdID)
			}
			for i, r := range rows {
				if r.Units <= 0 || r.RevenueCents <= 0 || r.Name == "" {
					t.Errorf("row %d: got %+v, want units > 0, revenue > 0 and a name", i, r)
				}
				if i > 0 && r.Units > rows[i-1].Units {
					t.Errorf("row %d: got units %d after %d, want descending units", i, r.Units, rows[i-1].Units)
				}
			}
			// The first row agrees with the same sum computed independently.
			want := queryInt(t, pool, `SELECT coalesce(sum(quantity), 0) FROM orders
				WHERE product_id = $1 AND created_at >= now() - make_interval(days => $2)`,
				tt.wantFirstProdID, tt.days)
			if rows[0].Units != want {
				t.Errorf("units of product %d: got %d, want %d", tt.wantFirstProdID, rows[0].Units, want)
			}
		})
	}
}
