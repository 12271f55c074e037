package middleware_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	limiter "github.com/ulule/limiter/v3"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/middleware"
)

// countingStore counts the calls that reach the shared store.
type countingStore struct {
	limiter.Store
	increments, gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key, rate)
}

func (s *countingStore) Increment(ctx context.Context, key string, n int64, rate limiter.Rate) (limiter.Context, error) {
	s.increments.Add(1)
	return s.Store.Increment(ctx, key, n, rate)
}

// TestLeaseStoreFleetWide: five instances, each with its own Redis client and
// its own leases, share one client's budget of 10 000 a minute. 15 000
// requests spread over them at random are admitted within 10 % under the
// limit and never over it, at about one Redis round trip per lease instead
// of one per request; once the budget is spent, refusals cost none.
func TestLeaseStoreFleetWide(t *testing.T) {
	t.Parallel()
	const limit, offered, instances = 10_000, 15_000, 5
	rate := limiter.Rate{Period: 60_000_000_000, Limit: limit}
	cases := []struct {
		name         string
		fraction     float64
		minAdmitted  int64
		maxRoundTrip int64
	}{
		{"lease 1 % of the limit", 0.01, limit * 9 / 10, limit/100 + 2*instances},
		{"lease of one token", 0, limit, limit + 2*instances},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "lease" + dbtest.Unique()
			var fleet []*middleware.LeaseStore
			var shared []*countingStore
			for range instances {
				cs := &countingStore{Store: redisStore(t, dbtest.NewRedis(t, redisDB), prefix)}
				shared = append(shared, cs)
				fleet = append(fleet, middleware.NewLeaseStore(cs, tc.fraction, 1000))
			}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for w := range 20 {
				wg.Go(func() {
					for range offered / 20 {
						lctx, err := fleet[rand.IntN(instances)].Get(context.Background(), "client", rate)
						if err != nil {
							t.Errorf("worker %d: %v", w, err)
							return
						}
						if !lctx.Reached {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			var trips int64
			for _, cs := range shared {
				trips += cs.increments.Load()
			}
			if a := admitted.Load(); a < tc.minAdmitted || a > limit {
				t.Errorf("admitted %d of %d offered, want between %d and the limit %d", a, offered, tc.minAdmitted, limit)
			}
			if trips > tc.maxRoundTrip {
				t.Errorf("%d round trips to Redis for %d requests, want at most %d", trips, offered, tc.maxRoundTrip)
			}
			t.Logf("admitted %d, %d round trips", admitted.Load(), trips)
		})
	}
}

// TestLeaseSpendAllocates: spending a token of a lease this instance holds
// — the decision of every counted request — allocates nothing, and neither
// does a refusal once the fleet's budget is known spent. Only taking a
// lease (once per RATE_LIMIT_LEASE of the limit) may. Not parallel:
// AllocsPerRun counts the whole process's allocations.
func TestLeaseSpendAllocates(t *testing.T) {
	cases := []struct {
		name  string
		limit int64 // the lease is 1 % of it
		spend int   // spent before measuring
	}{
		{"tokens left", 1_000_000_000, 1},
		{"budget spent", 2, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "leasealloc" + dbtest.Unique()
			store := middleware.NewLeaseStore(redisStore(t, dbtest.NewRedis(t, redisDB), prefix), 0.01, 100)
			rate := limiter.Rate{Period: time.Hour, Limit: tc.limit}
			ctx := context.Background()
			for range tc.spend {
				if _, err := store.Get(ctx, "client", rate); err != nil {
					t.Fatalf("Get: %v", err)
				}
			}
			var last limiter.Context
			allocs := testing.AllocsPerRun(1000, func() { last, _ = store.Get(ctx, "client", rate) })
			if allocs != 0 {
				t.Errorf("%v allocations per decision, want 0", allocs)
			}
			if wantReached := tc.spend >= int(tc.limit); last.Reached != wantReached {
				t.Errorf("last decision: %+v, want Reached %v", last, wantReached)
			}
		})
	}
}

// TestLeaseWindowChangeStartsAFreshCount moves one client from a budget of
// 5 an hour, spent, to 5 a second, as a fleet redeployed with a new
// RATE_LIMIT would. The new window counts afresh: the hour's counter (its
// expiry set when the hour opened) used to go on refusing the client until
// the hour ended.
func TestLeaseWindowChangeStartsAFreshCount(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	prefix := "leasewindow" + dbtest.Unique()
	rdb := dbtest.NewRedis(t, redisDB)
	hourly := middleware.NewLeaseStore(redisStore(t, rdb, prefix), 0.01, 100)
	perHour := limiter.Rate{Period: time.Hour, Limit: 5}
	for range 6 {
		if _, err := hourly.Get(ctx, "client", perHour); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if lc, _ := hourly.Get(ctx, "client", perHour); !lc.Reached {
		t.Fatalf("7th request of 5 an hour: not reached (%+v), want the budget spent", lc)
	}
	redeployed := middleware.NewLeaseStore(redisStore(t, rdb, prefix), 0.01, 100)
	lc, err := redeployed.Get(ctx, "client", limiter.Rate{Period: time.Second, Limit: 5})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if lc.Reached || lc.Remaining != 4 {
		t.Errorf("first request at 5 a second after the hour's budget was spent: reached %v, remaining %d; want a fresh count (remaining 4)", lc.Reached, lc.Remaining)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), prefix+":3600s:client", prefix+":1s:client") })
}
