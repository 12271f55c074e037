package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
)

// TestBreakerOpensOnHungServer: a database that stops answering (not one
// that refuses connections) still opens the breaker. Its statement_timeout
// cannot fire, so calls end on the caller's deadline; a call held far past
// statement_timeout counts as an outage, and after the threshold the next
// call is refused at once instead of waiting out its own deadline.
func TestBreakerOpensOnHungServer(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedURL(t, "hung")
	ctx := context.Background()
	pool, err := db.Open(ctx, db.Config{
		URL: dsn, MaxConns: 2, AcquireTimeout: 400 * time.Millisecond,
		StatementTimeout: 200 * time.Millisecond, Breaker: breaker.Config{Failures: 2, OpenMin: time.Minute},
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(pool.Close)
	// Runs before pool.Close: cut the hung links so closing does not wait
	// on connections that will never answer.
	t.Cleanup(func() { proxy.SetDown(true) })

	proxy.SetDelay(time.Hour) // the server is still there, it just never answers
	query := func() error {
		ctx, cancel := context.WithTimeout(ctx, 1200*time.Millisecond)
		defer cancel()
		return pool.With(ctx, func(c db.Conn) error {
			var one int
			return c.QueryRow(ctx, "SELECT 1").Scan(&one)
		})
	}
	for i := range 2 {
		if err := query(); !db.IsOutage(err) {
			t.Fatalf("call %d on the hung server: got %v, want an outage", i, err)
		}
	}
	start := time.Now()
	err = query()
	var refused *db.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, db.ErrCircuitOpen) {
		t.Fatalf("call after 2 outages: got %v, want a RefusedError for an open circuit", err)
	}
	// A call let through to the hung server ends only at its 1.2 s
	// deadline; the refusal sends nothing. Half that deadline is a bound
	// derived from it, with 600 ms for scheduling on a loaded machine.
	if took := time.Since(start); took >= 600*time.Millisecond {
		t.Errorf("refusal took %s, want well before the call's 1.2 s deadline", took)
	}
}
