package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stampede-guard/api/internal/app"
	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// childEnv, when "1", makes the test binary run the service itself instead
// of the tests: a test can then start the app as a separate process and kill
// it with SIGKILL, as a crash would, which an in-process app cannot show.
const childEnv = "STAMPEDE_TEST_CHILD"

// TestMain runs the service when asked to (childEnv), and otherwise keeps
// the local Redis Cluster up for the package: the app and the rate limiter
// are tested on it as well as on one Redis.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(app.Main(context.Background(), nil, os.Getenv, os.Stdout, os.Stderr))
	}
	code := rediscluster.Main(m).Run()
	if msg := openAPI.report(); msg != "" {
		fmt.Fprintln(os.Stderr, "FAIL:", msg)
		code = 1
	} else if code == 0 && testing.Verbose() {
		fmt.Println(openAPI.summary())
	}
	os.Exit(code)
}
