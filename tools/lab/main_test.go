package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary stand for the lab binary when a test starts
// a link process or the bare handler (both re-run os.Executable).
func TestMain(m *testing.M) {
	if child, err := runChild(); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
