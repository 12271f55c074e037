package cache_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestTTLJitterSpreadsExpiry: 1000 keys written within a second expire over
// a spread (up to TTLJitter of the TTL), never later than the TTL; without
// jitter they would all expire within that same second.
func TestTTLJitterSpreadsExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	const ttl = 100 * time.Second
	cases := []struct {
		name      string
		jitter    float64
		minSpread time.Duration
		maxSpread time.Duration
		mode      cache.Mode
		copies    int
	}{
		{"swr, 10%", 0.1, 8 * time.Second, 10 * time.Second, cache.ModeSWR, 1},
		{"lock, 10%, copies", 0.1, 8 * time.Second, 10 * time.Second, cache.ModeLock, 3},
		{"off", 0, 0, 100 * time.Millisecond, cache.ModeSWR, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, rdb, cache.Config{Mode: tc.mode, TTL: ttl, SoftTTL: 10 * time.Second, TTLJitter: tc.jitter, Copies: tc.copies})
			prefix := newPrefix()
			keys := make([]string, 1000)
			start := time.Now()
			for i := range keys {
				keys[i] = fmt.Sprintf("%s{%d}", prefix, i)
				if err := c.Set(ctx, keys[i], []byte("v")); err != nil {
					t.Fatalf("Set: %v", err)
				}
			}
			writing := time.Since(start) // keys written later expire later
			ttls := pttls(t, rdb, keys)
			spread := slices.Max(ttls) - slices.Min(ttls)
			if spread < tc.minSpread || spread > tc.maxSpread+writing {
				t.Errorf("1000 keys written in %s expire over %s, want between %s and %s + the writing time", writing, spread, tc.minSpread, tc.maxSpread)
			}
			if slices.Max(ttls) > ttl {
				t.Errorf("an expiry of %s exceeds CACHE_TTL %s", slices.Max(ttls), ttl)
			}
			if tc.copies > 1 {
				// Copies are named "{<id>#<n>}" with n chosen to land in
				// another slot range: pair each with its entry by id.
				copies := scanKeys(t, rdb, prefix+"*#*")
				if len(copies) != len(keys)*(tc.copies-1) {
					t.Fatalf("%d copies, want %d", len(copies), len(keys)*(tc.copies-1))
				}
				differ := 0
				for i, d := range pttls(t, rdb, copies) {
					var id int
					if _, err := fmt.Sscanf(strings.TrimPrefix(copies[i], prefix), "{%d#", &id); err != nil {
						t.Fatalf("copy %q: %v", copies[i], err)
					}
					if d > ttls[id] {
						t.Errorf("copy %s outlives its entry (%s > %s)", copies[i], d, ttls[id])
					}
					if d-ttls[id] > 100*time.Millisecond || ttls[id]-d > 100*time.Millisecond {
						differ++
					}
				}
				if differ < len(keys)/2 {
					t.Errorf("%d of %d copies expire apart from their entry, want most", differ, len(keys))
				}
			}
		})
	}
}

func pttls(t *testing.T, rdb *redis.Client, keys []string) []time.Duration {
	t.Helper()
	cmds := make([]*redis.DurationCmd, len(keys))
	if _, err := rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.PTTL(context.Background(), k)
		}
		return nil
	}); err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	out := make([]time.Duration, len(keys))
	for i, c := range cmds {
		if out[i] = c.Val(); out[i] <= 0 {
			t.Fatalf("key %s has no expiry (%s)", keys[i], out[i])
		}
	}
	return out
}
