package db

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationStatementTimeout bounds one migration statement, in place of the
// pool's request-sized statement_timeout.
const migrationStatementTimeout = 5 * time.Minute

// migrationConnectTimeout bounds one connect of the migration pool.
const migrationConnectTimeout = 10 * time.Second

// Migrate applies the pending migrations in fsys. Several instances may call
// it at the same moment on an empty database: goose's Postgres session locker
// holds an advisory lock for the whole run, so exactly one of them migrates
// and the others find nothing left to do.
func Migrate(ctx context.Context, p *Pool, fsys fs.FS, log *slog.Logger) error {
	locker, err := lock.NewPostgresSessionLocker(
		// Poll every second for up to 60 s: a slow first migration on a cold
		// database must not make the other instances give up.
		lock.WithLockTimeout(1, 60),
	)
	if err != nil {
		return fmt.Errorf("migrate: locker: %w", err)
	}
	// p's statement_timeout is sized for requests (seconds); a migration
	// such as the seed of 50 000 orders may legitimately take longer,
	// especially while other instances hammer the same server. Migrate on a
	// short-lived pool of the same configuration with a roomier timeout.
	cfg := p.Pool.Config()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(migrationStatementTimeout.Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt((2 * migrationStatementTimeout).Milliseconds(), 10)
	// The pool's connect timeout is sized for requests too (a fraction of
	// the acquire timeout); a start on a busy server must not fail on it.
	cfg.ConnConfig.ConnectTimeout = max(cfg.ConnConfig.ConnectTimeout, migrationConnectTimeout)
	mpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrate: pool: %w", err)
	}
	defer mpool.Close()
	sqlDB := stdlib.OpenDBFromPool(mpool)
	defer sqlDB.Close()

	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, fsys,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("migrate: provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: up: %w", err)
	}
	for _, r := range results {
		log.Info("migration applied", "source", r.Source.Path, "duration", r.Duration)
	}
	return nil
}
