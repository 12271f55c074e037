package e2e

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// The one harness of the end-to-end tests: an environment of the test's
// own (testEnv), seeded product ids (productID), the test's database
// (dbConn). The app run through app.Main: launch_test.go; requests and
// metrics: requests_test.go; responses checked against the OpenAPI
// document: openapi_check_test.go.

// redisDB is the Redis logical database of the end-to-end tests.
const redisDB = 4

// testAPIKey is the write key of every test app (API_KEYS in testEnv).
const testAPIKey = "test-key-0123456789abcdef"

// testEnv creates a fresh database for t and returns the environment that
// points run at it and at Redis database redisDB (on REDIS_URL) under a
// CACHE_NAMESPACE of the test's own (its keys are deleted when the test
// ends; nothing else in the database is touched), with the L1 and the rate
// limits off and product writes allowed with testAPIKey. Each of overrides
// is applied in turn; an empty value leaves the variable unset, so run
// takes its default.
func testEnv(t testing.TB, overrides ...map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":    dbtest.NewDatabase(t, "e2e"),
		"REDIS_URL":       dbtest.RedisDBURL(redisDB),
		"CACHE_NAMESPACE": dbtest.Namespace(t, redisDB),
		"L1_TTL":          "0",
		"RATE_LIMIT":      "off",
		// Likewise for the per-key budget of the key below.
		"RATE_LIMIT_KEY": "off",
		// Product writes need a key; send presents this one by default.
		"API_KEYS": testAPIKey,
	}
	for _, o := range overrides {
		maps.Copy(env, o)
	}
	return env
}

// envOf is a getenv over a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// nsKey is the Redis key name the app started with env uses for key.
func nsKey(env map[string]string, key string) string {
	if ns := env["CACHE_NAMESPACE"]; ns != "" {
		return ns + ":" + key
	}
	return key
}

// seededProducts is how many products the migrations create: ids 1 to
// seededProducts exist in every test database.
const seededProducts = 1000

// absentProductID names no product in a test database.
const absentProductID = 999999

// idsTaken holds each running test's last productID.
var idsTaken sync.Map // testing.TB → *atomic.Int64

// productID returns a seeded product id t has not taken before, so a
// product the test means to read cold has never been read, cached or
// written by an earlier step of it. Every test has a database and a cache
// namespace of its own, so ids never need to differ between tests.
func productID(t testing.TB) int64 {
	t.Helper()
	v, loaded := idsTaken.LoadOrStore(t, new(atomic.Int64))
	if !loaded {
		t.Cleanup(func() { idsTaken.Delete(t) })
	}
	id := v.(*atomic.Int64).Add(1)
	if id > seededProducts {
		t.Fatalf("productID: the test took more than the %d seeded products", seededProducts)
	}
	return id
}

// dbConn connects to the test's database for set-up and checks.
func dbConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// scalar runs a query of one integer.
func scalar(t testing.TB, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
