package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stampede-guard/api/cache/internal/redislock"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestMain fails the package if a watchdog outlives its stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisDB is the logical Redis database these tests use (the cache's: the
// keys carry a prefix of their own).
const redisDB = 1

// TestLockSemantics: one holder at a time, and a holder whose lock expired
// (a stale token) can neither release, extend nor write over the next one.
func TestLockSemantics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	prefix := "t" + dbtest.Unique() + ":"
	key := prefix + "{k}"
	lk := "lock:" + key

	// Long enough that the second Obtain surely finds it held, even on a
	// starved machine (50 ms was not); short enough to wait out.
	const staleTTL = 500 * time.Millisecond
	stale, err := redislock.Obtain(ctx, rdb, lk, staleTTL)
	if err != nil {
		t.Fatalf("first Obtain: got %v, want nil", err)
	}
	if _, err := redislock.Obtain(ctx, rdb, lk, time.Second); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("second Obtain while held: got %v, want ErrNotObtained", err)
	}
	// Redis checks expiry on every access, so past its TTL the lock is gone.
	time.Sleep(staleTTL + 50*time.Millisecond)
	if n := rdb.Exists(ctx, lk).Val(); n != 0 {
		t.Fatalf("lock %s outlived its %s TTL", lk, staleTTL)
	}
	holder, err := redislock.Obtain(ctx, rdb, lk, 5*time.Second)
	if err != nil {
		t.Fatalf("Obtain after expiry: got %v, want nil", err)
	}

	if err := stale.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release with stale token: got %v, want ErrLockNotHeld", err)
	}
	if n := rdb.Exists(ctx, lk).Val(); n != 1 {
		t.Errorf("after stale Release: got %d lock keys, want 1 (the holder's)", n)
	}

	if err := stale.Extend(ctx, time.Minute); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Extend with stale token: got %v, want ErrLockNotHeld", err)
	}
	if ttl := rdb.PTTL(ctx, lk).Val(); ttl > 5*time.Second {
		t.Errorf("after stale Extend: got lock TTL %s, want <= 5s (unchanged)", ttl)
	}
	if err := holder.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend by holder: got %v, want nil", err)
	}
	if ttl := rdb.PTTL(ctx, lk).Val(); ttl <= 5*time.Second {
		t.Errorf("after holder Extend: got lock TTL %s, want > 5s (about 1m)", ttl)
	}

	// The fenced write announces the value on a channel in the same step;
	// a write that lost its lock announces nothing.
	channel := prefix + "filled"
	sub := rdb.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatalf("subscribe: %v", err)
	}
	if err := stale.SetAndRelease(ctx, key, []byte("late"), time.Minute,
		redislock.Announce{Channel: channel, Message: "late"}); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("SetAndRelease with stale token: got %v, want ErrLockNotHeld", err)
	}
	if n := rdb.Exists(ctx, key, lk).Val(); n != 1 {
		t.Errorf("after stale SetAndRelease: got %d of {value, lock} keys, want 1 (lock only)", n)
	}
	if err := holder.SetAndRelease(ctx, key, []byte("fresh"), time.Minute,
		redislock.Announce{Channel: channel, Message: "fresh"}); err != nil {
		t.Errorf("SetAndRelease by holder: got %v, want nil", err)
	}
	// The first message on the channel is the holder's: the stale write
	// published none.
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if m, err := sub.ReceiveMessage(mctx); err != nil || m.Payload != "fresh" {
		t.Errorf("announcement after SetAndRelease: got %v, %v; want the message \"fresh\"", m, err)
	}
	if got := rdb.Get(ctx, key).Val(); got != "fresh" {
		t.Errorf("after holder SetAndRelease: got value %q, want %q", got, "fresh")
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("after holder SetAndRelease: got value TTL %s, want in (0, 1m]", ttl)
	}
	if n := rdb.Exists(ctx, lk).Val(); n != 0 {
		t.Errorf("after holder SetAndRelease: got %d lock keys, want 0", n)
	}
	if err := holder.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release after SetAndRelease: got %v, want ErrLockNotHeld", err)
	}
}

// TestHolderNamesTheHolder: a failed Obtain names the current holder's
// token, so a waiter can tell a live holder from a takeover.
func TestHolderNamesTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, lk, held := obtain(t, 10*time.Second)
	t.Cleanup(func() { _ = held.Release(ctx) })
	_, err := redislock.Obtain(ctx, rdb, lk, 10*time.Second)
	if got := redislock.Holder(err); got == "" || got != held.Token() {
		t.Errorf("Holder(second Obtain's error): got %q, want the holder's token %q", got, held.Token())
	}
	if got := redislock.Holder(errors.New("other")); got != "" {
		t.Errorf("Holder(unrelated error): got %q, want \"\"", got)
	}
}

// TestWatchKeepsTheLock: a watched lock outlives its TTL several times
// over, and stop reports the extensions it made.
func TestWatchKeepsTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// 600 ms: the watchdog ticks every 200 ms, slack for a loaded machine.
	const ttl = 600 * time.Millisecond
	rdb, lk, l := obtain(t, ttl)
	stop := l.Watch(ctx)
	time.Sleep(3 * ttl)
	if n := rdb.Exists(ctx, lk).Val(); n != 1 {
		t.Errorf("after 3 TTLs under the watchdog: got %d lock keys, want 1", n)
	}
	if n := stop(); n < 1 {
		t.Errorf("stop: got %d extensions, want >= 1", n)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release after the watch: got %v, want nil", err)
	}
}

// obtain takes a lock of the test's own for ttl.
func obtain(t *testing.T, ttl time.Duration) (*redis.Client, string, *redislock.Lock) {
	t.Helper()
	rdb := dbtest.NewRedis(t, redisDB)
	lk := "lock:{t" + dbtest.Unique() + "}"
	l, err := redislock.Obtain(context.Background(), rdb, lk, ttl)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	return rdb, lk, l
}

// TestObtainAndReadSeesTheKey: the lock attempt reads the guarded key in
// the same round trip, as it stands right after the attempt, whether the
// lock was taken or not; an absent key reads as nil, and so does one whose
// read fails, without hiding the lock it took.
func TestObtainAndReadSeesTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	cases := []struct {
		name   string
		stored string // "" for none
		held   bool   // another holder has the lock
		hash   bool   // the key holds a hash: its GET fails
	}{
		{"taken, key absent", "", false, false},
		{"taken, key stored", "v1", false, false},
		{"held elsewhere, key absent", "", true, false},
		{"held elsewhere, key stored", "v2", true, false},
		{"taken, key of another type", "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "t" + dbtest.Unique() + ":{k}"
			lk := "lock:" + key
			t.Cleanup(func() { rdb.Del(context.Background(), key, lk) })
			if tc.stored != "" {
				rdb.Set(ctx, key, tc.stored, time.Minute)
			}
			if tc.hash {
				rdb.HSet(ctx, key, "f", "v")
			}
			if tc.held {
				if _, err := redislock.Obtain(ctx, rdb, lk, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			l, got, err := redislock.ObtainAndRead(ctx, rdb, lk, time.Minute, key)
			if tc.held != errors.Is(err, redislock.ErrNotObtained) || (!tc.held && (err != nil || l == nil)) {
				t.Fatalf("lock: %v, %v (want taken: %v)", l, err, !tc.held)
			}
			if (got == nil) != (tc.stored == "") || string(got) != tc.stored {
				t.Errorf("read %q (nil: %v), want %q", got, got == nil, tc.stored)
			}
		})
	}
}
