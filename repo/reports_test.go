package repo_test

import (
	"math"
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

// TestReportsRevenuePastInt64: orders whose totals each fit in int64 (the
// order check, ErrTotalOverflow) can sum past it. PostgreSQL then refused
// the cast ("bigint out of range"), which reads as a client's mistake: every
// caller of the report got a 400 for as long as the orders stayed in its
// window. The revenue now stops at int64's largest value, as documented.
func TestReportsRevenuePastInt64(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "repo", db.Config{Name: "reports", MaxConns: 2})
	const near = math.MaxInt64 - 1000
	exec(t, pool, `INSERT INTO orders (product_id, quantity, total_cents) VALUES (1, 1, $1), (1, 1, $1), (2, 3, 30)`, int64(near))
	rows, err := repo.NewReports(pool).TopProducts(testCtx(t), 1, 5)
	if err != nil {
		t.Fatalf("TopProducts with a revenue past int64: %v", err)
	}
	want := map[int64]repo.TopProduct{
		1: {ProductID: 1, Units: 2, RevenueCents: math.MaxInt64},
		2: {ProductID: 2, Units: 3, RevenueCents: 30},
	}
	if len(rows) != len(want) {
		t.Fatalf("TopProducts: %d rows %+v, want %d", len(rows), rows, len(want))
	}
	for _, r := range rows {
		w := want[r.ProductID]
		if r.Units != w.Units || r.RevenueCents != w.RevenueCents {
			t.Errorf("product %d: %d units, %d cents; want %d units, %d cents", r.ProductID, r.Units, r.RevenueCents, w.Units, w.RevenueCents)
		}
	}
}
