package repo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// TopProduct is one row of the top-products report.
type TopProduct struct {
	ProductID    int64  `json:"product_id"`
	Name         string `json:"name"`
	Units        int64  `json:"units"`
	RevenueCents int64  `json:"revenue_cents"`
}

// Reports runs heavy, low-priority aggregates on their own pool (a
// bulkhead): a flood of reports can exhaust that pool, never checkout's.
type Reports struct {
	pool *db.Pool
}

// NewReports wires the reports repository on the reports pool.
func NewReports(pool *db.Pool) *Reports { return &Reports{pool: pool} }

// TopProducts aggregates the orders of the last `days` days by product and
// returns the `limit` best sellers by units. Each order's total fits in
// int64 (ErrTotalOverflow), but their sum may not: the revenue stops at
// int64's largest value rather than fail the report for everyone
// (PostgreSQL's "bigint out of range" reads as a client's mistake, a 400).
// SUM of bigint is numeric already, so the cap costs no cast per row; the
// units, a SUM of integers, would need billions of orders to overflow.
func (r *Reports) TopProducts(ctx context.Context, days, limit int) ([]TopProduct, error) {
	var out []TopProduct
	err := retry(ctx, func() error {
		return r.pool.With(ctx, func(conn db.Conn) error {
			rows, err := conn.Query(ctx, `
			SELECT p.id, p.name, SUM(o.quantity)::bigint AS units,
				LEAST(SUM(o.total_cents), 9223372036854775807)::bigint AS revenue
			FROM orders o JOIN products p ON p.id = o.product_id
			WHERE o.created_at >= now() - make_interval(days => $1)
			GROUP BY p.id, p.name
			ORDER BY units DESC, p.id
			LIMIT $2`, days, limit)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TopProduct])
			return err
		})
	})
	if err != nil {
		return nil, unavailable(fmt.Errorf("top products: %w", err), r.pool)
	}
	return out, nil
}
