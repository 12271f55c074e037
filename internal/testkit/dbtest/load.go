package dbtest

import (
	"context"
	"sync/atomic"
)

// HeldLoad is a loader standing in for a database query that is held back
// until gate closes: it counts its calls in calls, then returns value, or
// the context's error if ctx ends first (as a query would). Tests use it to
// observe what readers get while a load is pending.
func HeldLoad(calls *atomic.Int64, gate <-chan struct{}, value string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		select {
		case <-gate:
			return []byte(value), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
