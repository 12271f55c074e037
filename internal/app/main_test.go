package app

import (
	"os"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// The composition root's unit tests: its configuration, wiring and
// commands called directly. The scenarios that drive the app from outside
// (HTTP, Redis, PostgreSQL, app.Main) are in internal/e2e/.

// redisDB is the Redis logical database of this package's tests.
const redisDB = 4

// envOf is a getenv over a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestMain keeps the local Redis Cluster up for the package: the rate
// limiter's store is tested on it as well as on one Redis.
func TestMain(m *testing.M) {
	os.Exit(rediscluster.Main(m).Run())
}
