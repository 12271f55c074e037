package db_test

import (
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
)

// TestRefusedErrorText: the refusal's message, built without fmt, reads as
// it did with it (logs and tests grep it).
func TestRefusedErrorText(t *testing.T) {
	tests := []struct {
		err  *db.RefusedError
		want string
	}{
		{&db.RefusedError{Pool: "main", Reason: db.ErrSaturated, RetryAfter: 1500 * time.Millisecond}, "db main: db: pool saturated (retry after 1.5s)"},
		{&db.RefusedError{Pool: "reports", Reason: db.ErrCircuitOpen, RetryAfter: 2*time.Second + 345678*time.Nanosecond}, "db reports: db: circuit breaker open (retry after 2s)"},
		{&db.RefusedError{Pool: "main"}, "db main: refused (retry after 0s)"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
