package cache_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// forge builds what an attacker with write access to Redis can: a
// well-formed envelope (magic, flags, a soft expiry a second ahead, a
// delta, a hard expiry a minute ahead, version 1) around payload, followed
// by tail (e.g. a made-up signature).
func forge(flags byte, payload, tail string) string {
	b := []byte("sg\x02")
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().Add(time.Second).UnixMicro()))
	b = binary.BigEndian.AppendUint64(b, 1000)
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().Add(time.Minute).UnixMicro()))
	b = binary.BigEndian.AppendUint64(b, 1)
	return string(b) + payload + tail
}

// TestSignedEntriesRejectForgeries: with a SigningKey, a value planted in
// Redis by a raw client — unsigned, signed with another key, a genuine
// entry copied from another key, a genuine entry altered, a made-up tag —
// is never returned: Fetch loads over it (one load) and a second Fetch
// hits the value it stored. An entry signed by another instance with the
// same key is a hit, with no load.
func TestSignedEntriesRejectForgeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	secret := []byte("0123456789abcdef0123456789abcdef")
	ours := func(t *testing.T) *cache.Cache {
		return newCache(t, rdb, cache.Config{Mode: cache.ModeLock, SigningKey: secret})
	}
	// plant writes the forged value for key (and may use other keys of the
	// test's own prefix) and returns it.
	tests := []struct {
		name  string
		plant func(t *testing.T, prefix, key string) string
		loads int64 // 1: rejected and reloaded; 0: accepted
	}{
		{"unsigned envelope", func(t *testing.T, _, _ string) string { return forge(0, "forged", "") }, 1},
		{"unsigned absent entry", func(t *testing.T, _, _ string) string { return forge(1, "", "") }, 1},
		{"made-up tag", func(t *testing.T, _, _ string) string { return forge(4, "forged", string(make([]byte, 32))) }, 1},
		{"signed with another key", func(t *testing.T, _, key string) string {
			other := newCache(t, rdb, cache.Config{Mode: cache.ModeLock, SigningKey: []byte("another key, also 32 bytes long!")})
			if err := other.Set(ctx, key, []byte("forged")); err != nil {
				t.Fatal(err)
			}
			return rdb.Get(ctx, key).Val()
		}, 1},
		{"genuine entry of another key", func(t *testing.T, prefix, _ string) string {
			if err := ours(t).Set(ctx, prefix+"{p:2}", []byte("forged")); err != nil {
				t.Fatal(err)
			}
			return rdb.Get(ctx, prefix+"{p:2}").Val()
		}, 1},
		{"genuine entry altered", func(t *testing.T, _, key string) string {
			if err := ours(t).Set(ctx, key, []byte("genuine")); err != nil {
				t.Fatal(err)
			}
			b := []byte(rdb.Get(ctx, key).Val())
			copy(b[36:], "forged!") // same length, same tag
			return string(b)
		}, 1},
		{"genuine entry from another instance", func(t *testing.T, _, key string) string {
			if err := ours(t).Set(ctx, key, []byte("fresh")); err != nil {
				t.Fatal(err)
			}
			return rdb.Get(ctx, key).Val()
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := newPrefix()
			t.Cleanup(func() { dbtest.DeletePrefix(t, rdb, prefix) })
			key := prefix + "{p:1}"
			planted := tc.plant(t, prefix, key)
			if err := rdb.Set(ctx, key, planted, time.Minute).Err(); err != nil {
				t.Fatalf("plant: %v", err)
			}
			c := ours(t)
			var calls atomic.Int64
			for i := range 2 {
				res, err := c.Fetch(ctx, key, slowLoad(&calls, 0, "fresh"))
				if err != nil || string(res.Value) != "fresh" || res.Absent {
					t.Fatalf("fetch %d: got %q (absent %t), %v; want %q", i, res.Value, res.Absent, err, "fresh")
				}
			}
			if calls.Load() != tc.loads {
				t.Errorf("%d loads, want %d", calls.Load(), tc.loads)
			}
			if raw := rdb.Get(ctx, key).Val(); tc.loads == 1 && raw == planted {
				t.Errorf("Redis still holds the planted value, want it replaced by the load")
			}
		})
	}
}
