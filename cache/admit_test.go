package cache_test

import (
	"context"
	"errors"
	"sync"
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
		Admit: func(ctx context.Context) (context.Context, func(), error) {
			if refuse.Load() {
				return ctx, func() {}, errWouldRefuse
			}
			return ctx, func() {}, nil
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

type placeKey struct{}

// TestAdmitPlaceHeldUntilNotNeeded: a miss Admit lets through holds its
// place at the source (db.Pool.Claim counts it against the pool and its
// queue, so a burst cannot all pass at once) and must give it back as soon
// as it will not reach the source: here at once when another instance
// holds the key's lock, though this miss goes on waiting for that value;
// and a miss that loads runs its load under Admit's ctx and gives the
// place back when the load ends.
func TestAdmitPlaceHeldUntilNotNeeded(t *testing.T) {
	t.Parallel()
	rdb := dbtest.NewRedis(t, redisDB)
	ns := newPrefix()
	released := make(chan string, 4)
	c := newCache(t, rdb, cache.Config{
		Mode: cache.ModeLock, Namespace: ns, LockTTL: time.Minute, LockWait: 30 * time.Second,
		Admit: func(ctx context.Context) (context.Context, func(), error) {
			var once sync.Once
			return context.WithValue(ctx, placeKey{}, "claimed"), func() { once.Do(func() { released <- "released" }) }, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const held = "product:v1:{8}"
	if err := rdb.Set(ctx, ns+"lock:"+held, "another instance", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, stopWaiting := context.WithCancel(ctx)
	fetched := make(chan error, 1)
	var calls atomic.Int64
	go func() {
		_, err := c.Fetch(wctx, held, slowLoad(&calls, 0, "v"))
		fetched <- err
	}()
	select {
	case <-released:
	case err := <-fetched:
		t.Fatalf("Fetch returned (%v) before giving its place back", err)
	case <-time.After(10 * time.Second): // a third of LockWait: it is waiting, and still holds the place
		t.Fatal("a miss waiting for another instance's lock still holds its place at the source after 10 s")
	}
	select {
	case err := <-fetched:
		t.Fatalf("Fetch returned (%v) before the lock was released: the place was given back by ending the wait, not at its start", err)
	default:
	}
	stopWaiting()
	<-fetched

	// A miss that loads: under Admit's ctx, its place given back after.
	var sawPlace atomic.Bool
	load := func(ctx context.Context) ([]byte, error) {
		sawPlace.Store(ctx.Value(placeKey{}) == "claimed")
		select {
		case <-released:
			return nil, errors.New("the place was given back before the load ran")
		default:
		}
		return []byte("v"), nil
	}
	if r, err := c.Fetch(ctx, "product:v1:{9}", load); err != nil || string(r.Value) != "v" {
		t.Fatalf("Fetch while admitted: %q, %v", r.Value, err)
	}
	if !sawPlace.Load() {
		t.Error("the load did not run under the ctx Admit returned (the source cannot tell the claimed place)")
	}
	select {
	case <-released:
	default:
		t.Error("the place was not given back after the load ended")
	}
}
