// Package redislock is a token lock on one Redis key (SET key token NX PX
// ttl), in the shape of bsm/redislock. It protects a shared resource from
// two holders at once, and from a holder whose lock expired mid-work: every
// release, extension and write compares the token first (in Lua), so a late
// holder can neither unlock, extend nor overwrite the next holder's work.
package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotObtained means another holder has the lock: a normal outcome.
	ErrNotObtained = errors.New("redislock: not obtained")
	// ErrLockNotHeld means our token is no longer the lock's value: it
	// expired and maybe someone else holds it now.
	ErrLockNotHeld = errors.New("redislock: not held")
)

// Lua scripts run by SHA (go-redis Script falls back to EVAL on NOSCRIPT).
// Each compares the token first, so a holder whose lock expired can never
// delete, extend or write over the next holder's work.
var (
	releaseScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
end
return 0`)

	extendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)

	// KEYS[1] lock, KEYS[2] value; ARGV token, value, ttl ms, and an
	// optional channel and message published once the value is in. Both
	// keys carry the same hash tag, so this is legal on Redis Cluster too
	// (PUBLISH names no key; the cluster bus carries it to every node).
	fencedSetScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  redis.call("set", KEYS[2], ARGV[2], "PX", ARGV[3])
  redis.call("del", KEYS[1])
  if ARGV[4] ~= "" then
    redis.call("publish", ARGV[4], ARGV[5])
  end
  return 1
end
return 0`)
)

// Lock is one held attempt at a Redis lock: SET key token NX PX ttl.
type Lock struct {
	rdb   redis.Scripter
	key   string
	token string
	ttl   time.Duration
}

// Obtain tries once to take the lock key for ttl with a fresh random token.
func Obtain(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*Lock, error) {
	l, _, err := ObtainAndRead(ctx, rdb, key, ttl, "")
	return l, err
}

// ObtainAndRead is Obtain that also reads the key read ("" for none) in
// the same round trip, right after the attempt: nil when it is absent.
// Whoever takes a lock usually reads what it guards next (a double-check
// that no earlier holder did the work meanwhile), and whoever does not
// looks for the holder's result; either way one round trip fewer. On a
// Redis Cluster, read must share the lock's hash slot to stay one round
// trip.
func ObtainAndRead(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration, read string) (*Lock, []byte, error) {
	token := newToken()
	// One round trip: the attempt, who holds the lock if it fails (so a
	// waiter can tell a live holder from a takeover after a crash), and
	// the guarded key.
	var set *redis.BoolCmd
	var holder, value *redis.StringCmd
	// Each command carries its own answer: only the attempt's error is
	// the lock's. A failed read (the key holds another type) must not
	// hide a lock just taken, which would then be held until its TTL.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetNX(ctx, key, token, ttl)
		holder = p.Get(ctx, key)
		if read != "" {
			value = p.Get(ctx, read)
		}
		return nil
	})
	if err := set.Err(); err != nil {
		return nil, nil, fmt.Errorf("obtain %s: %w", key, err)
	}
	var b []byte // nil: absent (redis.Nil), or its read failed
	if value != nil && value.Err() == nil {
		b = []byte(value.Val())
	}
	if !set.Val() {
		return nil, b, &notObtained{holder: holder.Val()}
	}
	return &Lock{rdb: rdb, key: key, token: token, ttl: ttl}, b, nil
}

// notObtained is ErrNotObtained naming the current holder's token ("" when
// the lock vanished between the attempt and the read).
type notObtained struct{ holder string }

func (e *notObtained) Error() string        { return ErrNotObtained.Error() }
func (e *notObtained) Is(target error) bool { return target == ErrNotObtained }

// Holder returns the token of the holder that err (from Obtain) says has
// the lock, or "" when err does not name one. A waiter that sees the
// holder change knows the previous one died without a value.
func Holder(err error) string {
	var n *notObtained
	if errors.As(err, &n) {
		return n.holder
	}
	return ""
}

// Key is the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Token is the holder's random token, as Holder reports it to others.
func (l *Lock) Token() string { return l.token }

// Release deletes the lock if it is still ours.
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Int64()
	if err != nil {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrLockNotHeld
	}
	return nil
}

// Extend resets the lock's expiry to ttl if it is still ours.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, l.rdb, []string{l.key}, l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("extend %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrLockNotHeld
	}
	return nil
}

// Announce is a message SetAndRelease publishes in the same step as the
// write (no message when Channel is empty).
type Announce struct{ Channel, Message string }

// SetAndRelease stores value under key for ttl and releases the lock, in one
// atomic step, only while the lock is still ours: a fenced write. A holder
// that lost its lock during a slow load gets ErrLockNotHeld and writes
// nothing, so it cannot overwrite a newer value (the memcache lease rule).
// The write also publishes announce, so whoever waits for the value hears
// of it without another round trip after the write.
func (l *Lock) SetAndRelease(ctx context.Context, key string, value []byte, ttl time.Duration, announce Announce) error {
	n, err := fencedSetScript.Run(ctx, l.rdb, []string{l.key, key}, l.token, value, ttl.Milliseconds(),
		announce.Channel, announce.Message).Int64()
	if err != nil {
		return fmt.Errorf("fenced set %s: %w", key, err)
	}
	if n == 0 {
		return ErrLockNotHeld
	}
	return nil
}

// Watch extends the lock every ttl/3 until stop is called, so a load that
// runs longer than expected keeps its lock. stop waits for the watchdog to
// end and reports how many extensions it made. A lost lock needs no report:
// the fenced write that ends the load finds out for itself.
func (l *Lock) Watch(ctx context.Context) (stop func() (extensions int)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var extensions int
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A third of the TTL leaves two chances to extend before expiry,
		// even if one Redis round trip is slow.
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				err := l.Extend(ctx, l.ttl)
				if errors.Is(err, ErrLockNotHeld) {
					return
				}
				// A transient Redis error: the lock may still be ours, and
				// the next tick (ttl/3 later) can still save it.
				if err == nil {
					extensions++
				}
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return extensions
	}
}

// newToken is 128 random bits in hex: unguessable, so no other client can
// forge a holder's token.
func newToken() string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(raw[:])
}
