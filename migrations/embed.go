// Package migrations holds the schema (and products 1..1000) as SQL files
// embedded in the binary, so every instance carries the migrations it
// expects and applies them at start (see db.Migrate for why concurrent
// starts are safe), and the demo data that `api seed` adds.
package migrations

import "embed"

// FS holds the goose-formatted migration files.
//
//go:embed *.sql
var FS embed.FS

// DemoOrders is the statement `api seed` runs: 50 000 historical orders,
// added only while the orders table is empty.
//
//go:embed seed/demo_orders.sql
var DemoOrders string
