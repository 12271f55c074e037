package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/stampede-guard/api/cache/internal/redislock"
	"github.com/stampede-guard/api/internal/retryhint"
)

// Backoff of a waiter polling for another instance's load.
const (
	pollStart = 20 * time.Millisecond
	pollCap   = 200 * time.Millisecond
)

// loadLocked is the cross-instance miss path: take the Redis lock, check the
// cache again, load, and store with a fenced write. Whoever does not get the
// lock waits for the holder's fill signal (signal.go), and meanwhile polls
// the cache with capped exponential backoff and jitter (in case the signal
// is lost) until LockWait, then gives up with ErrLockTimeout (or, with
// WaiterLoad, loads the value itself).
func (c *Cache) loadLocked(ctx context.Context, key string, load LoadFunc) (Entry, error) {
	deadline := c.now().Add(c.cfg.LockWait)
	backoff := c.cfg.pollFirst
	holder := ""
	woken, stop := c.fills.watch(key) // before the first read that may miss
	defer stop()
	// The wait's own calls (lock attempts, polls) nest under its span; the
	// load and the write are its siblings under the Fetch.
	wctx, wait := c.startWait(ctx)
	defer wait.end("cancelled")
	filled := func() (Entry, bool) { // what another instance stored meanwhile
		e, ok, _ := c.readFill(key, noHold, func() (Entry, bool, error) { return c.read(wctx, key) })
		return e, ok
	}
	for {
		lock, seen, err := c.obtain(wctx, key)
		switch {
		case err == nil:
			wait.end("acquired")
			return c.loadHolding(ctx, key, lock, seen, load)
		case !errors.Is(err, redislock.ErrNotObtained):
			// The lock tier is gone; single-flight still bounds this process.
			wait.end("unavailable")
			c.warnOutage("cache: lock unavailable, loading without it", "key", key, "err", err)
			return c.loadCapped(ctx, key, load)
		}
		// Another instance loads the value: this one waits for it and
		// does not need the place at the source its miss was given.
		letGo(ctx)
		if h := redislock.Holder(err); h != "" && h != holder {
			if holder != "" {
				// The lock changed hands without a value: its holder died
				// and another instance took over. Its load deserves the
				// whole wait; the caller's deadline still bounds it.
				deadline = c.now().Add(c.cfg.LockWait)
			}
			holder = h
		}

		if e, ok := c.entry(key, seen, anyEntry); ok {
			wait.end("filled")
			markShared(ctx)
			return e, nil
		}
		if c.cfg.Waiter == WaiterFail {
			// Another instance is loading: answer "retry soon" at once
			// rather than hold this request while it polls.
			c.stats.lockTimeouts.Add(1)
			return Entry{}, c.lockTimeout(ctx, key, "fail-fast waiters", failFastHint)
		}
		left := deadline.Sub(c.now())
		if left <= 0 {
			c.stats.lockTimeouts.Add(1)
			wait.end("timeout")
			if c.cfg.Waiter == WaiterLoad {
				// Last resort: the holder is dead or slow. One query per
				// instance (single-flight, direct-load cap), not an error.
				return c.loadCapped(ctx, key, load)
			}
			return Entry{}, c.lockTimeout(ctx, key, "after "+c.cfg.LockWait.String(), math.MaxInt64)
		}
		// The last sleep is cut to the deadline: giving up when a whole
		// backoff no longer fits would end the wait up to one backoff early
		// (at 35% of a short LockWait) and miss a value landing meanwhile.
		sleep := min(backoff/2+rand.N(backoff/2+1), left) // #nosec G404 -- jitter keeps waiters apart; not a secret
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return Entry{}, fmt.Errorf("cache fetch %s: %w", key, ctx.Err())
		case <-woken:
			// The holder stored the value or let go of the lock: look now,
			// before trying the lock (a free lock after a fill would
			// otherwise make every instance lock, double-check, unlock).
			t.Stop()
			c.stats.signalWakeups.Add(1)
			wait.woken = true
			if e, ok := filled(); ok {
				wait.end("filled")
				markShared(ctx)
				return e, nil
			}
			continue
		case <-t.C:
			wait.polls++
		}
		backoff = min(2*backoff, max(pollCap, c.cfg.pollFirst))
	}
}

// obtain tries once to take key's lock and counts the outcome (acquired or
// contended), for every path that loads under the lock. In the same round
// trip it reads key's entry itself (never a copy, never a replica: one
// lagging behind would cost a second load of a value already stored), as
// it stands right after the attempt: a new holder's double-check, and what
// a loser finds stored meanwhile. That is one round trip fewer before a
// cold key's query, taken while the burst that missed it crowds the cores.
func (c *Cache) obtain(ctx context.Context, key string) (*redislock.Lock, look, error) {
	seen := look{mark: c.l1.mark()} // before the read, as readFill takes it
	lock, raw, err := redislock.ObtainAndRead(ctx, c.rdb, c.lockKey(key), c.cfg.LockTTL, key)
	seen.raw = raw
	switch {
	case err == nil:
		c.stats.lockAcquired.Add(1)
	case errors.Is(err, redislock.ErrNotObtained):
		c.stats.lockContended.Add(1)
	}
	return lock, seen, err
}

// look is key's entry as a lock attempt read it, with the L1 mark taken
// before the read.
type look struct {
	raw  []byte // nil: absent
	mark uint64
}

// entry decodes what the lock attempt saw as a read would (a corrupt,
// foreign or refused entry is a miss) and, when use accepts it, puts it
// in L1 as readFill would.
func (c *Cache) entry(key string, seen look, use func(Entry) bool) (Entry, bool) {
	if seen.raw == nil {
		return Entry{}, false
	}
	e, ok := c.decode(key, seen.raw)
	if !ok || !use(e) {
		return Entry{}, false
	}
	c.l1.fill(key, e, c.now(), seen.mark, time.Time{})
	return e, true
}

func anyEntry(Entry) bool { return true }

// failFastHint caps the retry hint of a fail-fast waiter: the holder's
// load usually ends long before its lock would expire (a 300 ms query
// under a 4 s lock), and the client chose to come back rather than wait.
const failFastHint = time.Second

// lockTimeout is ErrLockTimeout with a retry hint: how long the holder's
// lock still lives, after which the key is loaded again or can be taken
// over, and never more than most. An unknown TTL (Redis slow, lock just
// released) hints the poll cap.
func (c *Cache) lockTimeout(ctx context.Context, key, why string, most time.Duration) error {
	after := pollCap
	if ttl, err := c.rdb.PTTL(ctx, c.lockKey(key)).Result(); err == nil && ttl > 0 {
		after = min(ttl, most)
	}
	return fmt.Errorf("cache fetch %s: %w (%s)", key, retryhint.New(ErrLockTimeout, after), why)
}

// holdLimit is how long a load may run once it holds the lock: a whole
// LoadTimeout, and at least LockWait, since other instances' waiters wait
// that long for its value (a load cut shorter would waste their wait).
func (c *Cache) holdLimit() time.Duration { return max(c.cfg.LoadTimeout, c.cfg.LockWait) }
