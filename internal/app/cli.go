package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/migrations"
)

// usage is printed for an unknown command.
const usage = `usage: api [command]
  (none)          serve HTTP (applies pending migrations first unless MIGRATE_ON_START=false)
  help            print this list
  createdb        create the database DATABASE_URL names, if it does not exist yet
  migrate up      apply every pending migration
  migrate down    roll back the most recent migration
  migrate status  list the migrations and when each was applied
  seed            apply pending migrations, then add the demo data (50 000 orders) once
  keys create [--scope write]
                  make an API key, store its SHA-256, print the key (once)`

// errUsage is returned for a command line that names no known command.
var errUsage = errors.New(usage)

// command runs what args ask for: no argument serves HTTP (run); the
// others are one-shot jobs on DATABASE_URL that return when done.
func command(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return withCreateDBHint(dispatch(ctx, args, getenv, stdout))
}

// dispatch is command without the hint.
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return run(ctx, getenv, stdout)
	}
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		_, err := fmt.Fprintln(stdout, usage)
		return err
	}
	if len(args) == 1 && args[0] == "createdb" {
		return createDB(ctx, getenv, stdout)
	}
	if len(args) >= 2 && args[0] == "keys" && args[1] == "create" {
		return keysCreate(ctx, args[2:], getenv, stdout)
	}
	var job func(context.Context, *db.Pool, config.Config) error
	switch {
	case len(args) == 2 && args[0] == "migrate" && args[1] == "up":
		job = func(ctx context.Context, p *db.Pool, cfg config.Config) error {
			return db.Migrate(ctx, p, migrations.FS, newLogger(stdout, cfg.LogLevel))
		}
	case len(args) == 2 && args[0] == "migrate" && args[1] == "down":
		job = func(ctx context.Context, p *db.Pool, cfg config.Config) error {
			return db.MigrateDown(ctx, p, migrations.FS, newLogger(stdout, cfg.LogLevel))
		}
	case len(args) == 2 && args[0] == "migrate" && args[1] == "status":
		job = func(ctx context.Context, p *db.Pool, _ config.Config) error { return printStatus(ctx, p, stdout) }
	case len(args) == 1 && args[0] == "seed":
		job = func(ctx context.Context, p *db.Pool, cfg config.Config) error {
			n, err := db.Seed(ctx, p, migrations.FS, migrations.DemoOrders, newLogger(stdout, cfg.LogLevel))
			if err == nil {
				_, err = fmt.Fprintf(stdout, "seed: %d demo orders added (none when orders already exist)\n", n)
			}
			return err
		}
	default:
		return fmt.Errorf("unknown command %q\n%w", args, errUsage)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A job is bounded like a slow migration, not like a request.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	pool, err := db.Open(ctx, dbConfig(cfg, "main", 2, nil, newLogger(stdout, cfg.LogLevel)))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := job(ctx, pool, cfg); err != nil {
		// Say where a failure happened too, as the success line does.
		return fmt.Errorf("%s on %s: %w", strings.Join(args, " "), describeDB(cfg.DatabaseURL), err)
	}
	// Say where: a job run against the wrong DATABASE_URL is found at once.
	_, err = fmt.Fprintf(stdout, "%s: done on %s\n", strings.Join(args, " "), describeDB(cfg.DatabaseURL))
	return err
}

// printStatus writes one line per migration: version, state, file.
func printStatus(ctx context.Context, p *db.Pool, w io.Writer) error {
	states, err := db.MigrationStatus(ctx, p, migrations.FS)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tAPPLIED\tSOURCE")
	for _, s := range states {
		applied := "pending"
		if !s.AppliedAt.IsZero() {
			applied = s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%05d\t%s\t%s\n", s.Version, applied, s.Source)
	}
	return tw.Flush()
}
