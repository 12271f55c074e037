package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no call leaves a goroutine behind: no timer of a
// cancelled backoff, no request outliving its deadline.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
