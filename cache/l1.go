package cache

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// l1 is the in-process cache in front of Redis: a bounded LRU with a short
// TTL, so a hot key costs no network round trip at all and a Redis restart
// does not send every request to the database at once. Absent entries get
// their own, shorter TTL.
type l1 struct {
	lru         *expirable.LRU[string, l1Entry]
	ttl, negTTL time.Duration
	// gen counts invalidations. A read path notes it before reading Redis
	// or the database and fills L1 only if no invalidation came meanwhile:
	// otherwise a value read just before a write could land in L1 just
	// after that write's invalidation, and stay there for a whole TTL.
	gen atomic.Uint64
	// only, when set, limits L1 to keys under these prefixes: with CLIENT
	// TRACKING nothing else would ever be invalidated.
	only []string
	// hot, when set, picks the keys kept for hotTTL instead of ttl.
	hot    func(key string) bool
	hotTTL time.Duration
}

type l1Entry struct {
	entry Entry
	until time.Time // when this entry expires (sooner for negative ones)
	// hold, set on values loaded while Redis was unusable, is how long
	// the entry may still be served after until, as long as Redis still
	// is (outage.go). Zero for every other entry.
	hold time.Time
}

// newL1 gives the LRU no TTL of its own: with one, expirable.NewLRU starts a
// sweeper goroutine that nothing can stop (v2.0.7 has no Close), so every
// Cache would leak one past Close. Each entry carries its expiry instead,
// checked on get; size still bounds what expired entries can hold.
func newL1(size int, ttl, negTTL time.Duration) *l1 {
	return &l1{lru: expirable.NewLRU[string, l1Entry](size, nil, 0), ttl: ttl, negTTL: negTTL}
}

func (l *l1) get(key string, now time.Time) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	e, ok := l.lru.Get(key)
	if !ok || now.After(e.until) {
		return Entry{}, false
	}
	return e.entry, true
}

func (l *l1) set(key string, e Entry, now time.Time) {
	l.add(key, e, now, time.Time{})
}

func (l *l1) add(key string, e Entry, now, hold time.Time) {
	if l == nil || len(l.only) > 0 && !slices.ContainsFunc(l.only, func(p string) bool { return strings.HasPrefix(key, p) }) {
		return
	}
	le := l1Entry{entry: e, until: now.Add(l.ttl), hold: hold}
	switch {
	case e.Absent:
		le.until = now.Add(l.negTTL)
	case l.hot != nil && l.hot(key):
		le.until = now.Add(l.hotTTL)
	}
	// Never past the entry's own expiry: a copy filled just before Redis
	// drops the entry would otherwise serve it for a whole L1 TTL after,
	// as a hit (or, in swr mode, as stale past the hard TTL).
	if !e.HardExpiry.IsZero() && e.HardExpiry.Before(le.until) {
		le.until = e.HardExpiry
	}
	l.lru.Add(key, le)
}

func (l *l1) remove(key string) {
	if l != nil {
		l.gen.Add(1) // before the removal: a racing fill sees it afterwards
		l.lru.Remove(key)
	}
}

// mark is the invalidation count to pass to fill.
func (l *l1) mark() uint64 {
	if l == nil {
		return 0
	}
	return l.gen.Load()
}

// fill caches what a read found, unless an invalidation came since mark;
// hold, when set, lets the entry be held (outage.go) until then. The second
// check catches an invalidation that lands between the first and the Add;
// dropping the entry then costs at most one miss. Callers go through
// readFill.
func (l *l1) fill(key string, e Entry, now time.Time, mark uint64, hold time.Time) {
	if l == nil || l.gen.Load() != mark {
		return
	}
	l.add(key, e, now, hold)
	if l.gen.Load() != mark {
		l.lru.Remove(key)
	}
}

// noHold is readFill's hold for every value not loaded during an outage.
const noHold time.Duration = 0

// readFill is the L1 generation protocol around one read of key: note the
// invalidation count, read (Redis, or the source for a load), and put what
// read found in L1 only if no invalidation came meanwhile, so a value read
// just before a write cannot land in L1 after that write's invalidation.
// A read that finds nothing, or fails, fills nothing. hold > 0 marks a value
// loaded while Redis is unusable: L1 may serve it past its TTL, for up to
// hold and never past its freshness (outage.go).
func (c *Cache) readFill(key string, hold time.Duration, read func() (Entry, bool, error)) (Entry, bool, error) {
	mark := c.l1.mark()
	e, found, err := read()
	if err != nil || !found {
		return e, found, err
	}
	now := c.now()
	var until time.Time
	if hold > 0 {
		until = now.Add(hold)
		if e.SoftExpiry.Before(until) {
			until = e.SoftExpiry // a held value is never served stale
		}
	}
	c.l1.fill(key, e, now, mark, until)
	return e, true, nil
}

// purge empties L1, for when invalidations may have been missed.
func (l *l1) purge() {
	if l != nil {
		l.gen.Add(1)
		l.lru.Purge()
	}
}

// evictOlder drops key's entry if it is older than a fill elsewhere (its
// freshness ends before soft, or its version is below version). It does
// not bump the generation: a read racing the fill may still put the old
// value in for one L1 TTL, the bound L1 promises anyway, while every other
// key's fills go on undisturbed.
func (l *l1) evictOlder(key string, soft time.Time, version uint64) {
	if l == nil {
		return
	}
	if e, ok := l.lru.Peek(key); ok && (e.entry.SoftExpiry.Before(soft) || e.entry.Version < version) {
		l.lru.Remove(key)
	}
}
