package cache

import (
	"errors"
	"time"
)

// What a read checks after the envelope decoded (and its MAC verified):
// that the entry's lifetime is one this cache could have given it, and
// that it is not older than a version already seen (floor.go). Either
// failure is a miss — the key is loaded and stored afresh — never served,
// never an error. Asking Redis for the key's TTL would cost a command per
// read; the hard expiry the entry carries under its MAC bounds its life
// instead, whatever TTL Redis holds (none, after a PERSIST).

// clockSkew is how far instances' clocks may disagree before their
// entries look out of bounds to each other: generous, since a reader whose
// clock is behind would otherwise refuse every entry a correct writer made
// and load on every read.
const clockSkew = time.Minute

var (
	// errOutOfBounds: an entry whose soft or hard expiry is beyond what
	// this cache's TTLs give, or whose hard expiry has passed.
	errOutOfBounds = errors.New("cache: entry's lifetime is out of bounds")
	// errReplay: a genuine entry older than a version already seen.
	errReplay = errors.New("cache: entry is older than a version already seen (replay)")
)

// admit checks e, read under key at now, against the lifetime bounds and
// the key's version floor (raising the floor when e is newer).
func (c *Cache) admit(key string, e Entry, now time.Time) error {
	soft, hard := c.bounds(key, e)
	switch {
	case e.SoftExpiry.After(e.HardExpiry),
		e.SoftExpiry.After(now.Add(soft + clockSkew)),
		e.HardExpiry.After(now.Add(hard + clockSkew)),
		!now.Before(e.HardExpiry.Add(clockSkew)):
		return errOutOfBounds
	case !c.floors.admit(key, e.Version):
		return errReplay
	}
	return nil
}

// bounds are the longest soft and hard lifetimes newEntry gives e's kind
// of entry under key.
func (c *Cache) bounds(key string, e Entry) (soft, hard time.Duration) {
	switch {
	case e.Static && c.static[key]:
		return c.cfg.StaticTTL, c.cfg.StaticTTL
	case e.Static: // not a static key (any more): no static lifetime
		return 0, 0
	case e.Absent:
		return c.cfg.NegativeTTL, c.cfg.NegativeTTL
	}
	soft = c.lifetime(false)
	return soft, max(c.cfg.TTL, soft)
}

// refused counts an entry a read did not accept, by why, and logs it once
// per key until the key is written again.
func (c *Cache) refused(key string, size int, err error) {
	msg := "cache: ignoring corrupt value"
	var hint []any
	switch {
	case errors.Is(err, errReplay):
		c.stats.replays.Add(1)
		msg = "cache: ignoring an older entry (replay)"
	case errors.Is(err, errOutOfBounds):
		c.stats.outOfBounds.Add(1)
		msg = "cache: ignoring an entry with an out-of-bounds lifetime"
		// Most often not tampering (docs/operations.md).
		hint = []any{"hint", "written with longer TTLs than this instance's (a rolling change of CACHE_TTL, " +
			"CACHE_SOFT_TTL or CACHE_MODE), or by a clock more than a minute off?"}
	default:
		c.stats.corrupt.Add(1)
	}
	if _, seen := c.corrupt.LoadOrStore(key, struct{}{}); !seen {
		c.log.Warn(msg, append([]any{"key", key, "bytes", size, "err", err}, hint...)...)
	}
}
