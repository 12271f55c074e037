package app

import (
	"context"
	"log/slog"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/migrations"
)

// migrate applies the migrations on the main pool, or, behind a pooler, on
// a short-lived pool of its own straight to PostgreSQL.
func migrate(ctx context.Context, cfg config.Config, mainPool *db.Pool, log *slog.Logger) error {
	if !cfg.DBPooler.Behind() {
		return db.Migrate(ctx, mainPool, migrations.FS, log)
	}
	direct, err := db.Open(ctx, dbConfig(cfg, "migrate", 2, nil, log))
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
func logPoolerBudget(cfg config.Config, log *slog.Logger) {
	clients := cfg.ExpectedInstances * (cfg.MainMaxConns + cfg.ReportsMaxConns)
	log.Info("pool sizing: behind a pooler, PostgreSQL's connections are PgBouncer's server pools; "+
		"PgBouncer's max_client_conn must cover the instances' pools",
		"pooler", string(cfg.DBPooler), "client_connections", clients)
}
