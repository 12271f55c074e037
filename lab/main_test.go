package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary stand for the lab binary when a test starts
// a link process (NewLink re-runs os.Executable).
func TestMain(m *testing.M) {
	if target, ok := os.LookupEnv(linkEnv); ok {
		if err := runLink(target, os.Getenv(linkPGEnv) == "true"); err != nil {
			fmt.Fprintln(os.Stderr, "link:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
