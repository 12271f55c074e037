package cache_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestSlowLockLoadsWithoutIt: Redis slow for the lock alone (the commands
// naming the lock key cross a slow link, every other command is prompt), so
// the read before the lock cannot fail first. Within the client's I/O
// timeout the lock is taken late and the value stored; past it the lock
// counts as unavailable and the reads load without it, under single-flight
// and the per-instance cap, storing nothing. Either way 10 concurrent reads
// of a cold key cost one load and answer within their deadline.
func TestSlowLockLoadsWithoutIt(t *testing.T) {
	const ioTimeout = time.Second
	// An I/O timeout, then an instant load: 4 times that for a loaded
	// machine, and still well short of the slow lock's 10 s.
	const deadline = 4 * ioTimeout
	tests := []struct {
		name   string
		delay  time.Duration
		stored bool // the lock was taken: the holder stored the value
	}{
		{"within the I/O timeout", ioTimeout / 10, true},
		{"past the I/O timeout", 10 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			admin := dbtest.NewRedis(t, redisDB)
			key := newPrefix() + "{p:1}"
			lockKey := []byte("lock:" + key)
			link, err := netproxy.New(dbtest.RedisAddr(), netproxy.Options{
				SlowOnly: func(b []byte) bool { return bytes.Contains(b, lockKey) }})
			if err != nil {
				t.Fatalf("proxy: %v", err)
			}
			t.Cleanup(link.Close)
			rdb := redis.NewClient(&redis.Options{Addr: link.Addr(), DB: redisDB, MaxRetries: -1,
				DialTimeout: ioTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout})
			t.Cleanup(func() { _ = rdb.Close() }) // after the cache's Close, registered later
			c := newCache(t, rdb, cache.Config{Mode: cache.ModeLock})
			t.Cleanup(func() { link.SetDelay(0) }) // before the cache's Close
			link.SetDelay(tt.delay)

			var calls atomic.Int64
			load := slowLoad(&calls, 0, "v")
			start := make(chan struct{})
			errs := make(chan error, 10)
			var wg sync.WaitGroup
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), deadline)
					defer cancel()
					<-start
					res, err := c.Fetch(ctx, key, load)
					if err == nil && string(res.Value) != "v" {
						err = errors.New("got " + string(res.Value) + ", want v")
					}
					errs <- err
				}()
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("read with the lock %s slow: %v; want the value within %s", tt.delay, err, deadline)
				}
			}
			t.Logf("10 reads with the lock %s slow answered in %s", tt.delay, time.Since(t0).Round(time.Millisecond))
			if got := calls.Load(); got != 1 {
				t.Errorf("got %d loads for 10 concurrent reads, want 1", got)
			}
			n, err := admin.Exists(context.Background(), key).Result()
			if err != nil || (n == 1) != tt.stored {
				t.Errorf("key in Redis: %d, %v; want stored %v", n, err, tt.stored)
			}
		})
	}
}
