package cache

import (
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
}

type l1Entry struct {
	entry Entry
	until time.Time // when this entry expires (sooner for negative ones)
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
	if l == nil {
		return
	}
	le := l1Entry{entry: e, until: now.Add(l.ttl)}
	if e.Absent {
		le.until = now.Add(l.negTTL)
	}
	l.lru.Add(key, le)
}

func (l *l1) remove(key string) {
	if l != nil {
		l.lru.Remove(key)
	}
}

// purge empties L1, for when invalidations may have been missed.
func (l *l1) purge() {
	if l != nil {
		l.lru.Purge()
	}
}
