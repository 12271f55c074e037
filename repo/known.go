package repo

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/jackc/pgx/v5"
	"github.com/stampede-guard/api/db"
)

// Cache penetration: a flood of unique ids that do not exist costs one
// query (and one negative Redis key) each, since negative caching only
// helps for repeats. knownIDs is a Bloom filter of the ids that exist:
// an id it has never seen is answered "not found" without a query, except
// that an id above the highest known one — a product just created on
// another instance — may be looked up within a small budget per second
// shared by the whole fleet (a counter in Redis, cache.Quota), and the
// filter catches up with new ids at most once per second per instance. So
// unknown ids cost at most budget queries per second fleet-wide, plus one
// per instance, whatever their number (budget per instance while Redis is
// down).
type knownIDs struct {
	perSecond float64

	mu       sync.RWMutex
	filter   *bloom.BloomFilter // nil until loaded
	maxID    int64
	loadedAt time.Time // of the last full load
	caughtUp time.Time // of the last look for new ids

	loading sync.Mutex // one (re)load or catch-up at a time
	budget  interface{ Allow(context.Context) bool }
}

const (
	// knownFalsePositive is the filter's false-positive rate: that share
	// of unknown ids still takes the normal path (negative caching).
	knownFalsePositive = 0.001
	// knownCatchUpEvery bounds the queries that look for new ids.
	knownCatchUpEvery = time.Second
	// knownCatchUpOverlap is how far below the highest known id a
	// catch-up looks again, for ids that committed out of order.
	knownCatchUpOverlap = 1000
	// knownReloadEvery rebuilds the filter from scratch, for ids that
	// appeared below the highest one (inserted outside the app).
	knownReloadEvery = 10 * time.Minute
)

// FilterUnknownIDs turns on the penetration defence: at most perSecond
// lookups per second, across every instance sharing the cache's Redis and
// namespace, of ids the filter does not know (plus one catch-up query per
// second per instance). Call it once, before serving: it loads the filter
// now, so no request waits for that. On an error the defence stays on and
// the filter is loaded by a later read (at most one try a second).
func (p *Products) FilterUnknownIDs(ctx context.Context, perSecond float64) error {
	p.known = &knownIDs{perSecond: perSecond, budget: p.cache.NewQuota("unknown-id-lookups", int(perSecond))}
	if !p.known.refresh(ctx, p.pool, reloadIfOld) || !p.known.loaded() {
		return errors.New("repo: product id filter not loaded yet")
	}
	return nil
}

func (k *knownIDs) loaded() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.filter != nil
}

// verdict is what the filter says of an id.
type verdict int

const (
	mayExist verdict = iota // take the normal path
	lookUp                  // unknown, but within the budget: take the normal path, remember it if found
	absent                  // answer "not found" without a query
)

// check says whether id may exist. Any failure to load the filter means
// mayExist: the defence never turns an outage into wrong 404s.
//
// A read of a known id never pays for the filter's upkeep: the reload and
// the catch-ups happen on the path of unknown ids only.
func (k *knownIDs) check(ctx context.Context, pool interface {
	With(context.Context, func(db.Conn) error) error
}, id int64) verdict {
	k.mu.RLock()
	loaded, seen, maxID := k.filter != nil, k.filter != nil && k.filter.Test(idKey(id)), k.maxID
	k.mu.RUnlock()
	switch {
	case !loaded:
		k.refresh(ctx, pool, reloadIfOld) // the start-up load failed: try again
		return mayExist
	case seen:
		return mayExist
	case id > maxID && k.budget.Allow(ctx):
		return lookUp // perhaps created on another instance a moment ago
	case id > maxID && k.refresh(ctx, pool, reloadOrCatchUp) && k.seen(id):
		return mayExist
	}
	return absent
}

func (k *knownIDs) seen(id int64) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.filter != nil && k.filter.Test(idKey(id))
}

// add records an id that exists (created here, or found by a lookup). It
// leaves maxID alone: maxID is what the database showed, so ids between it
// and a new one (created meanwhile on other instances) stay "above the
// highest known" and may still be looked up.
func (k *knownIDs) add(id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.filter != nil {
		k.filter.Add(idKey(id))
	}
}

// refreshKind says how far refresh may go.
type refreshKind int

const (
	// reloadIfOld loads the filter only when it is missing or old.
	reloadIfOld refreshKind = iota
	// reloadOrCatchUp also adds the ids created since the last look.
	reloadOrCatchUp
)

// refresh loads the filter when it is missing or old, or, with
// reloadOrCatchUp, adds the ids created since the last look (at most once
// per knownCatchUpEvery). It reports whether it looked. Only one caller
// works at a time; the others go on with the filter as it is.
func (k *knownIDs) refresh(ctx context.Context, pool interface {
	With(context.Context, func(db.Conn) error) error
}, kind refreshKind) bool {
	catchUp := kind == reloadOrCatchUp
	k.mu.RLock()
	full := k.filter == nil || time.Since(k.loadedAt) > knownReloadEvery
	// At most one query per knownCatchUpEvery, failed ones included: a
	// database outage must not turn every read into a load attempt.
	due := time.Since(k.caughtUp) >= knownCatchUpEvery
	after := k.maxID
	k.mu.RUnlock()
	if !due || (!full && !catchUp) {
		return false
	}
	if !k.loading.TryLock() {
		return false
	}
	defer k.loading.Unlock()
	if full {
		after = 0
	} else {
		// Ids are handed out before their transactions commit, so a lower
		// id can appear after a higher one: look a little below.
		after = max(0, after-knownCatchUpOverlap)
	}
	var ids []int64
	err := pool.With(ctx, func(conn db.Conn) error {
		rows, err := conn.Query(ctx, `SELECT id FROM products WHERE id > $1 ORDER BY id`, after)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.caughtUp = now
	if err != nil {
		return false
	}
	if full {
		// Room for growth: the false-positive rate holds up to twice the
		// ids known now, and the next full load resizes.
		k.filter = bloom.NewWithEstimates(uint(max(2*len(ids), 1<<16)), knownFalsePositive)
		k.maxID, k.loadedAt = 0, now
	}
	for _, id := range ids {
		k.filter.Add(idKey(id))
		k.maxID = max(k.maxID, id)
	}
	return true
}

func idKey(id int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(id)) // #nosec G115 -- bytes of the id for hashing: any bijection will do
}
