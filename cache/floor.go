package cache

import (
	"crypto/hmac"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Replays. A genuine entry copied aside and put back after the key was
// rewritten verifies (its MAC is genuine) but holds an older value. With
// Config.Version every entry carries its value's version under the MAC,
// and each instance keeps, per key, the newest version it knows of (its
// floor): an entry older than the floor is refused and reloaded. The floor
// is fed by this instance's own stores, by the signed versions other
// instances' fill signals carry (every write-through ends with one), and
// by the entries it reads. It is bounded (an LRU), so a key forgotten, or
// an instance started after the write, accepts a replay until it sees a
// newer version again: docs/security.md says so.

// floorSize bounds the keys whose floor an instance keeps.
const floorSize = 65_536

// floors is the per-key version floor. One mutex around a plain LRU, so
// a check-and-raise is atomic: two raises never leave the lower one.
type floors struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, uint64]
}

func newFloors(size int) *floors {
	l, _ := simplelru.NewLRU[string, uint64](size, nil) // errors only for a size ≤ 0
	return &floors{lru: l}
}

// admit reports whether version v of key is not older than its floor,
// and raises the floor to v when v is newer. A nil floors admits all.
func (f *floors) admit(key string, v uint64) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.lru.Get(key)
	if ok && v < cur {
		return false
	}
	if !ok || v > cur {
		f.lru.Add(key, v)
	}
	return true
}

// set makes v key's floor, lower or not: v is what this instance just
// loaded from the source of truth and stored. A floor above the truth
// (a database restored from a backup) would otherwise refuse the key's
// every entry and cost a load per read; this way it costs one.
func (f *floors) set(key string, v uint64) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.lru.Add(key, v)
	f.mu.Unlock()
}

// A fill signal is "<soft µs>:<version>:<tag> <key>"; the tag is a MAC of
// the key and version (without a SigningKey, empty and the version
// ignored), so publishing to the channel cannot raise a floor and make an
// instance refuse genuine entries. An instance of the previous format
// ("<soft µs> <key>") still wakes its waiters from it.
func (c *Cache) fillMessage(key string, soft time.Time, version uint64) string {
	return strconv.FormatInt(soft.UnixMicro(), 10) + ":" + strconv.FormatUint(version, 10) + ":" +
		c.fillTag(key, version) + " " + key
}

// fillTag is the first 16 bytes of the MAC of (key, version), hex; empty
// without a SigningKey.
func (c *Cache) fillTag(key string, version uint64) string {
	if len(c.cfg.SigningKey) == 0 {
		return ""
	}
	return hex.EncodeToString(c.mac(key, []byte("fill:"+strconv.FormatUint(version, 10)))[:16])
}

// parseFill reads a fill signal. soft is zero when absent or unreadable;
// version is zero unless its tag verifies.
func (c *Cache) parseFill(payload string) (key string, soft time.Time, version uint64) {
	key, soft, rest := splitFill(payload)
	v, tag, _ := strings.Cut(rest, ":")
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || tag == "" || !hmac.Equal([]byte(tag), []byte(c.fillTag(key, n))) {
		return key, soft, 0
	}
	return key, soft, n
}

// ReadFill is what a fill signal tells an onlooker (the admin console's
// recent lock holders): the key, and whether its holder stored a value or
// let go without one. The tag is not checked: a forged signal can mislead
// only a display.
func ReadFill(payload string) (key string, stored bool) {
	key, soft, _ := splitFill(payload)
	return key, !soft.IsZero()
}

// splitFill cuts a fill signal (either format) into its key, its soft
// expiry (zero when absent or unreadable) and what follows the expiry.
func splitFill(payload string) (key string, soft time.Time, rest string) {
	head, key, _ := strings.Cut(payload, " ")
	micros, rest, _ := strings.Cut(head, ":")
	if n, err := strconv.ParseInt(micros, 10, 64); err == nil && n > 0 {
		soft = time.UnixMicro(n)
	}
	return key, soft, rest
}
