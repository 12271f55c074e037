package cache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

var errWouldRefuse = errors.New("the source would refuse this load")

// TestAdmitRefusesBeforeTheLock: a miss whose load the source would refuse
// (Config.Admit) is answered at once with that refusal — here while
// another instance holds the key's lock, which a miss would otherwise wait
// for (LockWait, 30 s) before anything else. A miss the source admits
// loads as usual.
func TestAdmitRefusesBeforeTheLock(t *testing.T) {
	t.Parallel()
	rdb := dbtest.NewRedis(t, redisDB)
	ns := newPrefix()
	var refuse atomic.Bool
	c := newCache(t, rdb, cache.Config{
		Mode: cache.ModeLock, Namespace: ns, LockTTL: time.Minute, LockWait: 30 * time.Second,
		Admit: func(context.Context) error {
			if refuse.Load() {
				return errWouldRefuse
			}
			return nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const key = "product:v1:{7}"
	if err := rdb.Set(ctx, ns+"lock:"+key, "another instance", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	var calls atomic.Int64
	_, err := c.Fetch(ctx, key, slowLoad(&calls, 0, "v"))
	held := rdb.Exists(ctx, ns+"lock:"+key).Val() == 1
	if !errors.Is(err, errWouldRefuse) || !held {
		t.Fatalf("Fetch while the source would refuse: err %v (want the refusal) returned with the other instance's lock held %v (want true)", err, held)
	}
	if calls.Load() != 0 {
		t.Errorf("a refused miss ran %d loads", calls.Load())
	}

	if err := rdb.Del(ctx, ns+"lock:"+key).Err(); err != nil {
		t.Fatal(err)
	}
	refuse.Store(false)
	if r, err := c.Fetch(ctx, key, slowLoad(&calls, 0, "v")); err != nil || string(r.Value) != "v" || calls.Load() != 1 {
		t.Errorf("Fetch while admitted: %q, %v after %d loads (want v, one load)", r.Value, err, calls.Load())
	}
}
