// Package migrations holds the schema and seed data as SQL files embedded in
// the binary, so every instance carries the migrations it expects and applies
// them at start (see db.Migrate for why concurrent starts are safe).
package migrations

import "embed"

// FS holds the goose-formatted migration files.
//
//go:embed *.sql
var FS embed.FS
