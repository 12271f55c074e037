package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
)

// checkSchema is the start's look at a schema it was told not to migrate
// (MIGRATE_ON_START=false). None at all refuses the start: it served
// /readyz 200 and answered every route 500 ("relation does not exist").
// Some migrations pending is allowed (a deploy may run them after the new
// code starts, as `api migrate up` does), and said once.
func checkSchema(ctx context.Context, mainPool *db.Pool, log *slog.Logger) error {
	applied, pending, err := db.SchemaState(ctx, mainPool, migrations.FS)
	switch {
	case err != nil:
		return err
	case len(applied) == 0:
		return errors.New("the database has no schema (MIGRATE_ON_START=false): run `api migrate up` first, or start with MIGRATE_ON_START=true")
	case len(pending) > 0:
		log.Warn("migrations pending: the schema is behind this build until `api migrate up` runs", "pending", pending)
	}
	return nil
}
