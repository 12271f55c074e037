// Package dbtest gives each test its own PostgreSQL database and its own
// Redis keys (a namespace or prefix in the package's logical database) on
// the real services, so packages that `go test ./...` runs in parallel never
// see each other's data, reruns start clean, and nothing the tests did not
// create is ever deleted. A missing service fails the test with a clear message: a skip
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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/migrations"
)

// AdminURL is the server tests create databases on: DATABASE_URL's server
// (or the local PostgreSQL), through its maintenance database "postgres",
// so DATABASE_URL may name the app's own database, or one not created yet.
// Tests never write to the database it names.
func AdminURL() string {
	raw := os.Getenv("DATABASE_URL")
	if raw == "" {
		return "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw // pgx reports it
	}
	u.Path = "/postgres"
	return u.String()
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
// its own number. Nothing is flushed: the Redis may be a user's, so tests
// keep to keys of their own (Namespace, or a random prefix) and leave the
// rest of the database alone.
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
	return rdb
}

// Namespace returns a CACHE_NAMESPACE of the test's own ("t" and a random
// suffix) and deletes the keys under it ("<ns>:*") in logical database n
// when the test ends: what the test created, and nothing else.
func Namespace(t testing.TB, n int) string {
	t.Helper()
	ns := "t" + suffix()
	rdb := NewRedis(t, n)
	t.Cleanup(func() { DeletePrefix(t, rdb, ns+":") })
	return ns
}

// DeletePrefix deletes every key that starts with prefix (SCAN, then DEL in
// batches); prefix must be one the test made, so no one else's key matches.
func DeletePrefix(t testing.TB, rdb *redis.Client, prefix string) {
	t.Helper()
	if prefix == "" {
		t.Fatal("dbtest: DeletePrefix with an empty prefix would delete every key")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			_ = rdb.Del(ctx, batch...).Err()
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		_ = rdb.Del(ctx, batch...).Err()
	}
	if err := iter.Err(); err != nil {
		t.Logf("dbtest: delete keys %s*: %v", prefix, err)
	}
}

// AllowFlushEnv names the variable that lets EmptyRedis run on a logical
// database that holds keys (and so lets its test flush them).
const AllowFlushEnv = "TEST_REDIS_FLUSH_OK"

// EmptyRedis is NewRedis for a test that must flush its logical database n
// (to watch what FLUSHDB does): it fails when n holds any key, unless
// TEST_REDIS_FLUSH_OK=1 says the database is scratch. The test must delete
// what it created, so the next run finds the database empty again.
func EmptyRedis(t testing.TB, n int) *redis.Client {
	t.Helper()
	rdb := NewRedis(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	size, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatalf("dbtest: DBSIZE of Redis db %d: %v", n, err)
	}
	if size > 0 && os.Getenv(AllowFlushEnv) != "1" {
		t.Fatalf("dbtest: this test flushes Redis db %d at %s, which holds %d keys it did not create: "+
			"point REDIS_URL at a scratch Redis, empty db %d yourself, or set %s=1 to let the test flush it",
			n, RedisURL(), size, n, AllowFlushEnv)
	}
	return rdb
}

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
