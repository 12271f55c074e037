package db

import (
	"context"
	"errors"
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
	return withProvider(ctx, p, fsys, func(provider *goose.Provider) error {
		results, err := provider.Up(ctx)
		if err != nil {
			return fmt.Errorf("migrate: up: %w", err)
		}
		for _, r := range results {
			log.Info("migration applied", "source", r.Source.Path, "duration", r.Duration)
		}
		return nil
	})
}

// MigrateDown rolls back the most recent applied migration.
func MigrateDown(ctx context.Context, p *Pool, fsys fs.FS, log *slog.Logger) error {
	return withProvider(ctx, p, fsys, func(provider *goose.Provider) error {
		r, err := provider.Down(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			return fmt.Errorf("migrate: down: nothing to roll back, no migration is applied: %w", err)
		}
		if err != nil {
			return fmt.Errorf("migrate: down: %w", err)
		}
		log.Info("migration rolled back", "source", r.Source.Path, "duration", r.Duration)
		return nil
	})
}

// MigrationState is one migration file and whether it is applied.
type MigrationState struct {
	Version   int64
	Source    string    // file name
	AppliedAt time.Time // zero while pending
}

// MigrationStatus lists every migration in fsys, oldest first.
func MigrationStatus(ctx context.Context, p *Pool, fsys fs.FS) ([]MigrationState, error) {
	var out []MigrationState
	err := withProvider(ctx, p, fsys, func(provider *goose.Provider) error {
		st, err := provider.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate: status: %w", err)
		}
		for _, s := range st {
			m := MigrationState{Version: s.Source.Version, Source: s.Source.Path}
			if s.State == goose.StateApplied {
				m.AppliedAt = s.AppliedAt
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// seedLockKey is the advisory lock Seed holds, so two seeds at once (two
// compose runs, a seed beside a start) insert the data once.
const seedLockKey = 0x5eed

// Seed applies the pending migrations, then runs stmt (demo data, one
// statement that adds nothing when its data is already there) under an
// advisory lock, with the same roomy timeouts as migrations. It returns the
// number of rows stmt inserted.
func Seed(ctx context.Context, p *Pool, fsys fs.FS, stmt string, log *slog.Logger) (int64, error) {
	if err := Migrate(ctx, p, fsys, log); err != nil {
		return 0, err
	}
	mpool, err := maintenancePool(ctx, p)
	if err != nil {
		return 0, err
	}
	defer mpool.Close()
	tx, err := mpool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("seed: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", seedLockKey); err != nil {
		return 0, fmt.Errorf("seed: lock: %w", err)
	}
	tag, err := tx.Exec(ctx, stmt)
	if err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("seed: commit: %w", err)
	}
	return tag.RowsAffected(), nil
}

// maintenancePool opens a short-lived pool of p's configuration for
// migrations and seeds, outside p's breaker and gate: they run once, before
// any traffic (or as a command of their own), and must not count against
// or wait behind the request path. p's statement_timeout is sized for requests
// (seconds); a migration or a seed may legitimately take longer, especially
// while other instances hammer the same server.
func maintenancePool(ctx context.Context, p *Pool) (*pgxpool.Pool, error) {
	cfg := p.pool.Config()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(migrationStatementTimeout.Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt((2 * migrationStatementTimeout).Milliseconds(), 10)
	// A migration may wait for the locks of requests in flight: only its
	// statement timeout bounds the wait.
	delete(cfg.ConnConfig.RuntimeParams, "lock_timeout")
	// The pool's connect timeout is sized for requests too (a fraction of
	// the acquire timeout); a start on a busy server must not fail on it.
	cfg.ConnConfig.ConnectTimeout = max(cfg.ConnConfig.ConnectTimeout, migrationConnectTimeout)
	mpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("migrate: pool: %w", err)
	}
	return mpool, nil
}

// withProvider runs fn with a goose provider on a maintenance pool, under
// goose's session lock.
func withProvider(ctx context.Context, p *Pool, fsys fs.FS, fn func(*goose.Provider) error) error {
	locker, err := lock.NewPostgresSessionLocker(
		// Poll every second for up to 60 s: a slow first migration on a cold
		// database must not make the other instances give up.
		lock.WithLockTimeout(1, 60),
	)
	if err != nil {
		return fmt.Errorf("migrate: locker: %w", err)
	}
	mpool, err := maintenancePool(ctx, p)
	if err != nil {
		return err
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
	return fn(provider)
}
