package retryhint_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/retryhint"
)

// TestHintSurvivesWrapping: the hint and the reason are both found through
// further wrapping, as middleware.Refuse and errors.Is look for them.
func TestHintSurvivesWrapping(t *testing.T) {
	reason := errors.New("lock held elsewhere")
	err := fmt.Errorf("get product 7: %w", retryhint.New(reason, 1500*time.Millisecond))
	var h interface{ RetryHint() time.Duration }
	if !errors.As(err, &h) || h.RetryHint() != 1500*time.Millisecond {
		t.Fatalf("hint not found in %v", err)
	}
	if !errors.Is(err, reason) {
		t.Fatalf("reason lost in %v", err)
	}
	if err.Error() != "get product 7: lock held elsewhere" {
		t.Fatalf("message %q", err)
	}
}
