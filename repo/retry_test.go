package repo

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestBackoffFullJitterBounds(t *testing.T) {
	for attempt := 1; attempt <= 6; attempt++ {
		ceiling := min(backoffCap, backoffBase<<(attempt-1))
		for _, rnd := range []float64{0, 0.5, 0.999999} {
			t.Run(fmt.Sprintf("attempt %d rnd %g", attempt, rnd), func(t *testing.T) {
				got := backoff(attempt, func() float64 { return rnd })
				if got < 0 || got >= ceiling {
					t.Errorf("got %s, want in [0, %s)", got, ceiling)
				}
				// Full jitter is uniform over the whole range: rnd maps
				// linearly onto it, so 0 waits nothing and 0.5 half.
				if want := time.Duration(rnd * float64(ceiling)); got != want {
					t.Errorf("got %s, want %s (rnd × ceiling)", got, want)
				}
			})
		}
	}
	if got, want := min(backoffCap, backoffBase<<5), backoffCap; got != want {
		t.Errorf("ceiling at attempt 6: got %s, want the cap %s", got, want)
	}
}

func TestRetry(t *testing.T) {
	serialization := &pgconn.PgError{Code: "40001"}
	cases := []struct {
		name         string
		err          error
		wantAttempts int
	}{
		{"transient: serialization failure, stops at the limit", serialization, maxAttempts},
		{"transient: deadlock", &pgconn.PgError{Code: "40P01"}, maxAttempts},
		{"not found: once", ErrNotFound, 1},
		{"unique violation: once", &pgconn.PgError{Code: "23505"}, 1},
		{"out of stock: once", fmt.Errorf("order: %w", ErrOutOfStock), 1},
		{"success: once", nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			err := retry(context.Background(), func() error { attempts++; return tc.err })
			if attempts != tc.wantAttempts {
				t.Errorf("attempts: got %d, want %d", attempts, tc.wantAttempts)
			}
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("error: got %v, want %v", err, tc.err)
			}
		})
	}

	t.Run("transient then success", func(t *testing.T) {
		attempts := 0
		err := retry(context.Background(), func() error {
			if attempts++; attempts < 2 {
				return serialization
			}
			return nil
		})
		if err != nil || attempts != 2 {
			t.Errorf("got %v after %d attempts, want nil after 2", err, attempts)
		}
	})

	t.Run("stops when ctx is cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		attempts := 0
		start := time.Now()
		err := retry(ctx, func() error { attempts++; cancel(); return serialization })
		if attempts != 1 {
			t.Errorf("attempts: got %d, want 1 (no retry after cancel)", attempts)
		}
		if !errors.Is(err, context.Canceled) || !errors.Is(err, serialization) {
			t.Errorf("error: got %v, want both the last error and context.Canceled", err)
		}
		if elapsed := time.Since(start); elapsed > backoffCap {
			t.Errorf("returned after %s, want at once (< %s)", elapsed, backoffCap)
		}
	})
}
