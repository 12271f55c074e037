package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
)

// schemaPoll is how often a start waiting for `api migrate up` looks at
// the schema again: one tiny query.
const schemaPoll = 2 * time.Second

// checkSchema is the start's look at a schema it was told not to migrate
// (MIGRATE_ON_START=false). None at all refuses the start: it served
// /readyz 200 and answered every route 500 ("relation does not exist").
// Migrations pending hold the start until they are applied: a deploy may
// start the new code first and run `api migrate up` after it, and this
// build's queries need its schema (orders answered 500 behind a 200
// /readyz). Meanwhile /readyz answers 503 "starting" (handlers.Starting),
// so the instance takes no traffic; ctx's end (a SIGTERM) stops the wait.
func checkSchema(ctx context.Context, mainPool *db.Pool, log *slog.Logger) error {
	for waited := 0; ; waited++ {
		applied, pending, err := db.SchemaState(ctx, mainPool, migrations.FS)
		switch {
		case err != nil:
			return err
		case len(applied) == 0:
			return errors.New("the database has no schema (MIGRATE_ON_START=false): run `api migrate up` first, or start with MIGRATE_ON_START=true")
		case len(pending) == 0:
			if waited > 0 {
				log.Info("migrations applied: starting")
			}
			return nil
		case waited%30 == 0: // at once, then once a minute
			log.Warn("migrations pending: waiting for `api migrate up` before serving (/readyz 503 until then)", "pending", pending)
		}
		t := time.NewTimer(schemaPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for pending migrations: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// warnMaintenanceDB warns when DATABASE_URL names one of the databases a
// PostgreSQL server keeps for itself (a URL without a path names the
// user's, which for the user postgres is one of them). The migrations put
// the app's tables there, beside whatever else uses it, and in template1
// into every database created after. The start goes on: some hosted
// servers give a user no other.
func warnMaintenanceDB(ctx context.Context, pool *db.Pool, log *slog.Logger) {
	var name string
	err := pool.With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name)
	})
	if err == nil && (name == "postgres" || name == "template1") {
		log.Warn("DATABASE_URL names the server's maintenance database: the app's tables go into it; give the app a database of its own (`api createdb` makes the one DATABASE_URL names)",
			"database", name)
	}
}
