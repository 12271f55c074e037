package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary stand for the lab binary when a test starts
// a link process or the bare handler (both re-run os.Executable).
func TestMain(m *testing.M) {
	if body, ok := os.LookupEnv(bareEnv); ok {
		if err := runBare(body, os.Getenv(bareModeEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if target, ok := os.LookupEnv(linkEnv); ok {
		if err := runLink(target, os.Getenv(linkPGEnv) == "true"); err != nil {
			fmt.Fprintln(os.Stderr, "link:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
