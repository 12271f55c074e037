package client

import (
	"math"
	"sync"
	"testing"
)

func TestBudgetAccounting(t *testing.T) {
	tests := []struct {
		name       string
		failures   int
		successes  int
		wantTokens float64
		wantRetry  bool
	}{
		{"full", 0, 0, 10, true},
		{"four failures leave six: above half", 4, 0, 6, true},
		{"five failures leave five: not above half", 5, 0, 5, false},
		{"never below zero", 50, 0, 0, false},
		{"a success gives back a tenth", 5, 1, 5.1, true},
		{"ten successes give back one", 6, 10, 5, false},
		{"never above the maximum", 0, 100, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(10, 0.1)
			for range tt.failures {
				b.failure()
			}
			for range tt.successes {
				b.success()
			}
			if got := b.Tokens(); math.Abs(got-tt.wantTokens) > 1e-9 {
				t.Errorf("tokens = %v, want %v", got, tt.wantTokens)
			}
			if got := b.allowRetry(); got != tt.wantRetry {
				t.Errorf("allowRetry = %v, want %v", got, tt.wantRetry)
			}
		})
	}
}

func TestBudgetDefaultsAndNil(t *testing.T) {
	b := NewBudget(0, 0)
	if b.Tokens() != DefaultBudgetTokens || b.ratio != DefaultBudgetRatio {
		t.Errorf("NewBudget(0, 0) = %v tokens ratio %v, want %v, %v", b.Tokens(), b.ratio, DefaultBudgetTokens, DefaultBudgetRatio)
	}
	var none *Budget // WithBudget(nil): no limit, no panic
	none.failure()
	none.success()
	if !none.allowRetry() {
		t.Error("a nil budget must allow retries")
	}
}

// TestBudgetConcurrent takes tokens from many goroutines at once: the
// count stays exact (run with -race).
func TestBudgetConcurrent(t *testing.T) {
	b := NewBudget(1000, 0.5)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			for range 5 {
				b.failure()
				b.success()
				b.allowRetry()
			}
		})
	}
	wg.Wait()
	if got := b.Tokens(); math.Abs(got-750) > 1e-6 {
		t.Errorf("tokens = %v, want 750 (500 failures, 500 half-token successes)", got)
	}
}
