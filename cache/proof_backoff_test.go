package cache_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// pollLog is a go-redis hook that records when its client tried to take
// one lock: each try is one poll of a waiter (the lock attempt and the
// cache read that follows it). Counting on the client itself needs no
// MONITOR and sees nobody else's commands.
type pollLog struct {
	lock string
	mu   sync.Mutex
	at   []time.Time
}

func (h *pollLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *pollLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *pollLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "set" && len(cmds[0].Args()) > 1 && cmds[0].Args()[1] == h.lock {
			h.mu.Lock()
			h.at = append(h.at, time.Now())
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (h *pollLog) times() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.at)
}

// waitOnDeadHolder starts n waiters (n instances, each on a client of its
// own) at the same moment on a key whose lock a holder keeps for a minute
// and never fills. Nobody publishes on the waiters' fill channel, so only
// their polling brings them back to Redis. Each waits lockWait and gives
// up; the result is each waiter's poll times and the common start.
func waitOnDeadHolder(t *testing.T, n int, lockWait time.Duration) (start time.Time, polls [][]time.Time) {
	t.Helper()
	ctx := context.Background()
	key := newPrefix() + "{poll:1}"
	admin := dbtest.NewRedis(t, redisDB)
	if err := admin.Set(ctx, "lock:"+key, "holder-that-never-fills", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Del(context.Background(), "lock:"+key) })
	cfg := cache.Config{Mode: cache.ModeLock, LockWait: lockWait, FillChannel: "fill:" + dbtest.Unique()}
	logs := make([]*pollLog, n)
	fleet := make([]*cache.Cache, n)
	for i := range fleet {
		rdb := dbtest.NewRedis(t, redisDB)
		logs[i] = &pollLog{lock: "lock:" + key}
		rdb.AddHook(logs[i])
		fleet[i] = newCache(t, rdb, cfg)
	}
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range fleet {
		wg.Go(func() {
			<-gate
			_, err := c.Fetch(ctx, key, func(context.Context) ([]byte, error) { return []byte("never"), nil })
			if !errors.Is(err, cache.ErrLockTimeout) {
				t.Errorf("waiter: %v, want ErrLockTimeout (the holder never fills)", err)
			}
		})
	}
	start = time.Now()
	close(gate)
	wg.Wait()
	for _, l := range logs {
		polls = append(polls, l.times())
	}
	return start, polls
}

// TestWaiterBackoffGrows: a waiter polls a held lock with exponential
// backoff (20 ms doubling to a 200 ms cap), so over a 1.5 s wait it polls
// about a dozen times (at most 18 with every jittered sleep at its
// shortest), not the ~100 times a fixed 20 ms poll would cost. A busy
// machine can only make it poll less.
func TestWaiterBackoffGrows(t *testing.T) {
	t.Parallel()
	_, polls := waitOnDeadHolder(t, 1, 1500*time.Millisecond)
	n := len(polls[0])
	t.Logf("one waiter polled %d times in 1.5s", n)
	// The upper bound is the claim (a busy machine can only lower n);
	// the lower one only says the waiter kept polling after its first try.
	if n < 2 || n > 25 {
		t.Errorf("one waiter polled %d times in 1.5s, want 2..25 (backoff 20ms doubling to 200ms)", n)
	}
}

// TestWaitersPollOutOfStep: waiters that start together must not poll in
// lockstep, or every backoff step brings the whole crowd back to Redis at
// the same instant. Eight waiters start at once; with jittered sleeps
// (each step a random time in [backoff/2, backoff]) their k-th polls drift
// apart by tens of milliseconds within a few steps, while fixed sleeps keep
// them within scheduling noise of each other. Noise on a busy machine only
// spreads them more, so the lower bound cannot flake.
func TestWaitersPollOutOfStep(t *testing.T) {
	t.Parallel()
	const waiters = 8
	// 2.5 s leaves room for eight polls each even on a starved machine.
	start, polls := waitOnDeadHolder(t, waiters, 2500*time.Millisecond)
	// Spread (latest − earliest) of the k-th poll across waiters, for the
	// polls after the backoff has grown (k = 4..7: 140 ms to 700 ms in).
	var spreads []time.Duration
	for k := 4; k < 8; k++ {
		var at []time.Duration
		for _, p := range polls {
			if k < len(p) {
				at = append(at, p[k].Sub(start))
			}
		}
		if len(at) < waiters {
			t.Fatalf("poll %d: only %d of %d waiters polled that often: %v", k, len(at), waiters, polls)
		}
		spreads = append(spreads, slices.Max(at)-slices.Min(at))
	}
	slices.Sort(spreads)
	if median := spreads[len(spreads)/2]; median < 40*time.Millisecond {
		t.Errorf("spread of the waiters' 4th–7th polls: %v (median %v), want ≥ 40ms: they poll in lockstep", spreads, median)
	}
	t.Logf("spread of the waiters' 4th–7th polls: %v", spreads)
}
