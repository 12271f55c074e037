// Package dbtest gives each test package its own PostgreSQL database and its
// own Redis logical database on the real services, so packages that
// `go test ./...` runs in parallel never see each other's data and reruns
// start clean. A missing service fails the test with a clear message: a skip
// would prove nothing in CI.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
)

// AdminURL is the server tests create databases on: DATABASE_URL, or the
// local PostgreSQL.
func AdminURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// RedisURL is the Redis tests use: REDIS_URL, or the local one.
func RedisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// RedisAddr is the host:port of RedisURL, for tests that put a proxy in
// front of it.
func RedisAddr() string {
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		return "127.0.0.1:6379"
	}
	return opt.Addr
}

// RedisDBURL is RedisURL with its logical database set to n.
func RedisDBURL(n int) string {
	u, err := url.Parse(RedisURL())
	if err != nil {
		return RedisURL()
	}
	u.Path = "/" + strconv.Itoa(n)
	return u.String()
}

// NewDatabase creates an empty database named after prefix and a random
// suffix, and drops it when the test ends. It returns the database's URL.
func NewDatabase(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("dbtest: PostgreSQL is not reachable at %s (start it, or set DATABASE_URL): %v", AdminURL(), err)
	}
	defer admin.Close(context.Background())

	name := "test_" + prefix + "_" + suffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(AdminURL())
	if err != nil {
		t.Fatalf("dbtest: parse %s: %v", AdminURL(), err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewPool creates a migrated database (products 1..1000 seeded) and opens a
// pool on it with cfg (URL and zero fields filled in).
func NewPool(t testing.TB, prefix string, cfg db.Config) *db.Pool {
	t.Helper()
	cfg.URL = NewDatabase(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("dbtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := db.Migrate(ctx, pool, migrations.FS, Logger(t)); err != nil {
		t.Fatalf("dbtest: migrate: %v", err)
	}
	return pool
}

// NewRedis returns a client on logical database n. Each test package picks
// its own number; the first call in a test binary flushes it, so reruns
// start clean. Tests in one package that may share keys must not run in
// parallel, or must use Unique keys.
func NewRedis(t testing.TB, n int) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("dbtest: parse REDIS_URL %s: %v", RedisURL(), err)
	}
	opt.DB = n
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("dbtest: Redis is not reachable at %s (start it, or set REDIS_URL): %v", RedisURL(), err)
	}
	flushOnce.mu.Lock()
	defer flushOnce.mu.Unlock()
	if !flushOnce.done[n] {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatalf("dbtest: flush Redis db %d: %v", n, err)
		}
		flushOnce.done[n] = true
	}
	return rdb
}

// flushOnce records which logical databases this test binary has flushed.
var flushOnce = struct {
	mu   sync.Mutex
	done map[int]bool
}{done: map[int]bool{}}

// Unique returns a short random string for keys and channel names.
func Unique() string { return suffix() }

// Logger writes to the test log when -v is set and discards otherwise.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func suffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
