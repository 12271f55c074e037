package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// PG is the lab's own direct line to PostgreSQL (never through the proxy):
// it creates and drops the experiments' databases and reads the server's
// statistics, which count the queries independently of anything the service
// says about itself.
//
// Counting method. Every product-by-id query is one scan of the index
// products_pkey, so its idx_scan in pg_stat_user_indexes counts them. A
// backend does not publish its counters at once: PostgreSQL 15 flushes them
// when the backend goes idle, at most once a second, and a backend that
// flushed less than a second before keeps the rest pending for up to
// PGSTAT_IDLE_INTERVAL (10 s). Reading "1.5 s after the load" can therefore
// miss the last queries of a busy connection (the sanity experiment shows
// it). A backend flushes everything when it exits, so the lab reads the
// counter after the instances have stopped and their backends are gone; a
// fresh database per cluster starts the counter at zero.
type PG struct {
	admin string // URL of the maintenance database
}

// url returns the URL of database name on the same server, reached through
// host (host:port; empty means the admin URL's).
func (pg *PG) url(name, host string) string {
	u, err := url.Parse(pg.admin)
	if err != nil {
		panic(err) // validated at start
	}
	u.Path = "/" + name
	if host != "" {
		u.Host = host
	}
	return u.String()
}

func (pg *PG) connect(ctx context.Context, name string) (*pgx.Conn, error) {
	u := pg.admin
	if name != "" {
		u = pg.url(name, "")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, u)
}

// exec runs one statement on database name ("" for the admin database) on a
// connection of its own, closed after.
func (pg *PG) exec(ctx context.Context, name, sql string, args ...any) error {
	conn, err := pg.connect(ctx, name)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// CreateDatabase creates name as a copy of template ("" for the default).
func (pg *PG) CreateDatabase(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := pg.exec(ctx, "", sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// DropDatabase drops name, disconnecting whoever is still on it.
func (pg *PG) DropDatabase(ctx context.Context, name string) error {
	if err := pg.exec(ctx, "", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// Backends counts the sessions connected to database name ("" for all).
func (pg *PG) Backends(ctx context.Context, name string) (int, error) {
	conn, err := pg.connect(ctx, "")
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND ($1 = '' OR datname = $1)`, name).Scan(&n)
	return n, err
}

// ConnectionsFree is how many more client sessions the server accepts:
// max_connections less the superuser reserve and the sessions already open.
func (pg *PG) ConnectionsFree(ctx context.Context) (int, error) {
	conn, err := pg.connect(ctx, "")
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int
		- current_setting('superuser_reserved_connections')::int
		- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`).Scan(&n)
	return n, err
}

// WaitNoBackends waits until nobody is connected to database name: every
// backend that served it has exited and so has flushed its statistics.
func (pg *PG) WaitNoBackends(ctx context.Context, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := pg.Backends(ctx, name)
		if err != nil {
			return err
		}
		if n == 0 {
			// The session leaves pg_stat_activity a moment before its
			// exit hook flushes the counters.
			return sleepCtx(ctx, 200*time.Millisecond)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d backends still connected to %s after %s", n, name, timeout)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// IndexScans reads idx_scan of products_pkey in database name, after
// dropping the session's statistics snapshot so the value is current.
func (pg *PG) IndexScans(ctx context.Context, name string) (int64, error) {
	n, err := pg.freshCount(ctx, name, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'products_pkey'`)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil // not migrated yet: nothing scanned it
	}
	return n, err
}

// freshCount runs a query of one integer on database db ("" for the
// maintenance database) after dropping the session's statistics snapshot,
// so counters read are current.
func (pg *PG) freshCount(ctx context.Context, db, sql string, args ...any) (int64, error) {
	conn, err := pg.connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return 0, err
	}
	var n int64
	err = conn.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// SettledScans is IndexScans once every backend of the database is gone:
// the exact count of product-by-id queries since the database was created.
func (pg *PG) SettledScans(ctx context.Context, name string) (int64, error) {
	if err := pg.WaitNoBackends(ctx, name, 20*time.Second); err != nil {
		return 0, err
	}
	return pg.IndexScans(ctx, name)
}

// Transactions reads xact_commit + xact_rollback of database name from
// pg_stat_database: every transaction its backends ended, the app's
// statements (each its own transaction unless inside one) and health
// checks alike. Read once every backend is gone, it is exact (see PG).
func (pg *PG) Transactions(ctx context.Context, name string) (int64, error) {
	return pg.freshCount(ctx, "", `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, name)
}

// HasDatabase reports whether database name exists on the server.
func (pg *PG) HasDatabase(ctx context.Context, name string) bool {
	conn, err := pg.connect(ctx, "")
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n)
	return err == nil && n == 1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
