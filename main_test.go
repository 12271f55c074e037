package main

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// childEnv, when "1", makes the test binary run the service itself instead
// of the tests: a test can then start the app as a separate process and kill
// it with SIGKILL, as a crash would, which an in-process app cannot show.
const childEnv = "STAMPEDE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(context.Background(), os.Getenv, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
