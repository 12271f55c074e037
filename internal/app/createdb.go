package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// createDB creates the database DATABASE_URL names when it is missing, by
// connecting to the same server's maintenance database "postgres". The app
// keeps its tables in a database of its own (stampede by default), never in
// the server's maintenance database, so `make run` calls this first.
func createDB(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("createdb: DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return errors.New("createdb: DATABASE_URL names no database")
	}
	maint := *u
	maint.Path = "/postgres"
	conn, err := pgx.Connect(ctx, maint.String())
	if err != nil {
		return fmt.Errorf("createdb: connect to the maintenance database: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P04": // duplicate_database
		_, err = fmt.Fprintf(stdout, "createdb: %s already exists\n", describeDB(cfg.DatabaseURL))
		return err
	case err != nil:
		return fmt.Errorf("createdb: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "createdb: created %s\n", describeDB(cfg.DatabaseURL))
	return err
}

// withCreateDBHint adds the way out to an error that says the database
// DATABASE_URL names does not exist (SQLSTATE 3D000): on a fresh server
// that is the first error a newcomer running the binary by hand meets,
// since the app never connects to the maintenance database on its own.
func withCreateDBHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
		return fmt.Errorf("%w\nthe database does not exist yet: `api createdb` creates it (`make run` does so first)", err)
	}
	return err
}

// describeDB names a database URL's database and server, never its
// password: `database "stampede" on 127.0.0.1:5432`.
func describeDB(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the database DATABASE_URL names"
	}
	return fmt.Sprintf("database %q on %s", strings.TrimPrefix(u.Path, "/"), u.Host)
}
