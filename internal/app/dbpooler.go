package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
)

// checkPooler refuses a pooler setting that cannot work: behind PgBouncer in
// transaction pooling, goose's session advisory lock (which lets several
// instances start at once) would be taken on one server connection and
// released on another, so migrations need PostgreSQL itself.
func (c config) checkPooler() error {
	if c.DBPooler.Behind() && c.DatabaseDirectURL == "" {
		return errors.New("config: DATABASE_DIRECT_URL: required with DB_POOLER=" + string(c.DBPooler) +
			": migrations hold a session advisory lock, which transaction pooling breaks; point it at PostgreSQL itself")
	}
	return nil
}

// migrate applies the migrations on the main pool, or, behind a pooler, on
// a short-lived pool of its own straight to PostgreSQL.
func migrate(ctx context.Context, cfg config, mainPool *db.Pool, log *slog.Logger) error {
	if !cfg.DBPooler.Behind() {
		return db.Migrate(ctx, mainPool, migrations.FS, log)
	}
	direct, err := db.Open(ctx, cfg.dbConfig("migrate", 2, nil, log))
	if err != nil {
		return err
	}
	defer direct.Close()
	return db.Migrate(ctx, direct, migrations.FS, log)
}

// logPoolerBudget replaces the max_connections check behind PgBouncer: the
// server then sees PgBouncer's server pools (default_pool_size per database
// and user), not the instances' pools, which count against PgBouncer's
// max_client_conn instead.
func logPoolerBudget(cfg config, log *slog.Logger) {
	clients := cfg.ExpectedInstances * (cfg.MainMaxConns + cfg.ReportsMaxConns)
	log.Info("pool sizing: behind a pooler, PostgreSQL's connections are PgBouncer's server pools; "+
		"PgBouncer's max_client_conn must cover the instances' pools",
		"pooler", string(cfg.DBPooler), "client_connections", clients)
}
