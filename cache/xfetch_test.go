package cache

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestXFetchEarlyDeterministic pins the rule now − delta·beta·ln(r) ≥ expiry
// at chosen r, where the answer is exact.
func TestXFetchEarlyDeterministic(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	const delta = 100 * time.Millisecond
	tests := []struct {
		name      string
		remaining time.Duration
		beta, r   float64
		want      bool
	}{
		{"r=1 adds no gap, before expiry", time.Millisecond, 1, 1, false},
		{"r=1 adds no gap, at expiry", 0, 1, 1, true},
		{"past expiry always", -time.Second, 1, 1, true},
		{"gap 200ms covers 199ms", 199 * time.Millisecond, 1, math.Exp(-2), true},
		{"gap 200ms misses 201ms", 201 * time.Millisecond, 1, math.Exp(-2), false},
		{"beta 2 doubles the gap", 399 * time.Millisecond, 2, math.Exp(-2), true},
		{"beta 2 doubled gap misses 401ms", 401 * time.Millisecond, 2, math.Exp(-2), false},
	}
	for _, tc := range tests {
		if got := xfetchEarly(now, now.Add(tc.remaining), delta, tc.beta, tc.r); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestXFetchEarlyProbability: with r uniform in (0,1] the chance of an early
// refresh is exp(−remaining/(delta·beta)) (docs/architecture.md, "How it protects the database").
func TestXFetchEarlyProbability(t *testing.T) {
	t.Parallel()
	const (
		draws = 100_000
		delta = 100 * time.Millisecond
		// 1 percentage point is over 6 standard deviations at 100 000
		// draws (the largest, at p = 0.5, is 0.16 points).
		tolerance = 0.01
	)
	now := time.Unix(1_700_000_000, 0)
	remainings := []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}
	for _, beta := range []float64{1, 2} {
		for _, rem := range remainings {
			hits := 0
			for range draws {
				if xfetchEarly(now, now.Add(rem), delta, beta, randUnit()) {
					hits++
				}
			}
			got := float64(hits) / draws
			want := math.Exp(-float64(rem) / (float64(delta) * beta))
			if math.Abs(got-want) > tolerance {
				t.Errorf("beta %g, remaining %s: got P(early) %.4f, want %.4f ± %.2f", beta, rem, got, want, tolerance)
			}
		}
	}
}

// TestXFetchRefreshesNearExpiry: an entry close to its expiry relative to
// how long it took to compute is served as a HIT while one background load
// replaces it; one far from expiry is left alone.
func TestXFetchRefreshesNearExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	c := New(ctx, rdb, Config{Mode: ModeXFetch, Channel: "inv:" + dbtest.Unique()}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	prefix := "t" + dbtest.Unique() + ":"

	// The loader is held back until the near key's first Fetch has
	// returned: that Fetch must not wait for the refresh it starts.
	var calls atomic.Int64
	gate := make(chan struct{})
	load := dbtest.HeldLoad(&calls, gate, "new")

	// Far: 10 minutes left of a 1 ms computation, P = exp(−600 000) = 0.
	far := prefix + "{far}"
	put(t, c, far, Entry{Value: []byte("old"), SoftExpiry: time.Now().Add(10 * time.Minute), Delta: time.Millisecond})
	for range 50 {
		if res, err := c.Fetch(ctx, far, load); err != nil || string(res.Value) != "old" || res.Status != Hit {
			t.Fatalf("far key: got %q, %s, %v, want %q, HIT, nil", res.Value, res.Status, err, "old")
		}
	}

	// Near: 1 minute left of a 1 day computation, P = exp(−1/1440) > 0.999
	// per Fetch. Still fresh for a minute, so only an early refresh can
	// replace it within the 2 s this test waits.
	near := prefix + "{near}"
	put(t, c, near, Entry{Value: []byte("old"), SoftExpiry: time.Now().Add(time.Minute), Delta: 24 * time.Hour})
	res, err := c.Fetch(ctx, near, load)
	close(gate)
	if err != nil || string(res.Value) != "old" || res.Status != Hit {
		t.Fatalf("near key: got %q, %s, %v, want %q, HIT, nil", res.Value, res.Status, err, "old")
	}
	var last Result
	ok := dbtest.Eventually(2*time.Second, func() bool {
		last, err = c.Fetch(ctx, near, load)
		return err == nil && string(last.Value) == "new"
	})
	if !ok {
		t.Fatalf("near key: got %q (%s) for 2s, want the refreshed %q", last.Value, last.Status, "new")
	}
	if last.Status != Hit || last.TTL < 9*time.Minute {
		t.Errorf("near key after refresh: got %s with %s left, want HIT with about the 10m TTL", last.Status, last.TTL)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("got %d loads, want 1 (the near key's refresh only)", got)
	}
	if got := c.Stats().Refreshes; got != 1 {
		t.Errorf("got Stats().Refreshes %d, want 1", got)
	}
}

// redisDB is the logical Redis database this package's tests use.
const redisDB = 1

// put stores e under key as a load would have.
func put(t *testing.T, c *Cache, key string, e Entry) {
	t.Helper()
	if e.HardExpiry.IsZero() { // bounds.go: never before the soft expiry
		e.HardExpiry = e.SoftExpiry
	}
	if err := c.write(context.Background(), key, e, time.Minute); err != nil {
		t.Fatalf("write %s: %v", key, err)
	}
}
