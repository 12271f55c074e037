package dbtest

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually asks: often enough that a test waiting
// on another goroutine or server loses at most a few milliseconds.
const pollEvery = 5 * time.Millisecond

// Eventually polls cond until it holds (true) or within passes (false), for
// tests that wait on something another goroutine, instance or server does.
func Eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// WaitFor polls cond until it holds and fails the test if it has not after
// 10 s: that bound only keeps a broken build from hanging, it is not what
// the test measures.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Eventually(10*time.Second, cond) {
		t.Fatalf("gave up waiting for %s", what)
	}
}
