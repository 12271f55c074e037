package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
	"github.com/stampede-guard/api/repo"
)

// commandTimeout bounds a one-shot command (connect, migrate, one insert).
const commandTimeout = 2 * time.Minute

// keysCreate makes an API key, stores its hash and prints the key: the only
// time anyone sees it.
func keysCreate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scope := fs.String("scope", repo.ScopeWrite, "what the key may do: "+strings.Join(repo.Scopes, ", "))
	// Every argument is checked before anything connects or migrates.
	usage := fmt.Sprintf("usage: api keys create [--scope %s]", strings.Join(repo.Scopes, "|"))
	switch err := fs.Parse(args); {
	case err != nil:
		return fmt.Errorf("keys create: %w; %s", err, usage)
	case fs.NArg() > 0:
		return fmt.Errorf("keys create: unexpected argument %q; %s", fs.Arg(0), usage)
	case !slices.Contains(repo.Scopes, *scope):
		return fmt.Errorf("keys create: unknown scope %q (known: %s); %s", *scope, strings.Join(repo.Scopes, ", "), usage)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	log := newLogger(os.Stderr, cfg.LogLevel)
	pool, err := db.Open(ctx, dbConfig(cfg, "keys", 1, nil, log))
	if err != nil {
		return err
	}
	defer pool.Close()
	// The table may not exist yet on a fresh database.
	if err := db.Migrate(ctx, pool, migrations.FS, log); err != nil {
		return err
	}
	key, err := repo.NewAPIKeys(pool).Create(ctx, *scope)
	if err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	log.Info("keys create: key stored", "where", describeDB(cfg.DatabaseURL), "scope", *scope)
	_, err = fmt.Fprintf(stdout, "%s\n", key)
	return err
}
