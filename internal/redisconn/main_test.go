package redisconn_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// breaker probe that Close did not stop, or a tracking connection still
// reading.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisDB is the logical Redis database this package's tests use: package
// cache's, whose tests keep to prefixes of their own as these do.
const redisDB = 1

// newPrefix returns a key prefix of the test's own, so tests can run in
// parallel on one Redis database without seeing each other's keys.
func newPrefix() string { return "t" + dbtest.Unique() + ":" }
