package repo

import (
	"context"
	"encoding/binary"
	"log/slog"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
)

// Cache penetration: a flood of unique ids that do not exist costs one
// query (and one negative Redis key) each, since negative caching only
// helps for repeats. knownIDs is a Bloom filter of the ids that exist:
// an id it has never seen is answered "not found" without a query, except
// that an id above what the id sequence had handed out when the filter
// last read the table — a product just created on another instance — or a
// little below it (knownCatchUpOverlap: an id handed out earlier whose
// transaction committed later) may be looked up within a small budget per
// second
// shared by the whole fleet (a counter in Redis, cache.Quota). So unknown
// ids cost at most budget queries per second fleet-wide, plus one
// catch-up per second per instance while they come, whatever their number
// (budget per instance while Redis is down).
//
// No request ever waits for the filter: it is loaded and kept up by a
// goroutine of its own (known_upkeep.go), and until it is loaded every id
// takes the normal path. Start-up therefore does not depend on the size of
// the catalogue.
type knownIDs struct {
	budget interface{ Allow(context.Context) bool }
	wake   chan struct{} // asks the upkeep for a catch-up; never blocks
	// checkEvery is how often the upkeep looks for rows it has not seen
	// (knownCheckEvery).
	checkEvery time.Duration
	log        *slog.Logger

	mu       sync.RWMutex
	filter   *bloom.BloomFilter // nil until loaded
	free     func()             // releases filter's bits
	capacity uint               // ids the filter was sized for
	ids      uint               // distinct ids added since it was built
	// handedOut is the id sequence's last value when the filter last read
	// the table. The line is the sequence, not the highest id in the
	// table: a product imported with its own id far above the sequence
	// made every product created after it look long known, and so
	// "never created" (404 without a look) until the next check.
	handedOut int64
	inserted  int64 // the table's insert count when ids was last in step with it
	inStep    uint  // ids at that moment
}

const (
	// knownFalsePositive is the filter's false-positive rate: that share
	// of unknown ids still takes the normal path (negative caching).
	knownFalsePositive = 0.001
	// knownMaxBits bounds the filter's memory (24 MiB: about 13 million
	// ids at knownFalsePositive; more ids raise the false-positive rate,
	// never cause a wrong 404). A reload holds two filters for a moment.
	knownMaxBits = 24 << 23
)

// verdict is what the filter says of an id.
type verdict int

const (
	mayExist verdict = iota // take the normal path
	lookUp                  // unknown, but within the budget: take the normal path, remember it if found
	absent                  // answer "not found" without a query
	// overBudget: unknown and past the lookup budget, so not looked up in
	// the database; perhaps created on another instance a moment ago, so
	// answered from the cache alone, and "not found" only as a guess.
	overBudget
)

// check says whether id may exist, from memory only. A filter not loaded
// yet (or that failed to load) means mayExist: the defence never turns an
// outage into wrong 404s, and never makes a request wait.
func (k *knownIDs) check(ctx context.Context, id int64) verdict {
	var buf [8]byte
	k.mu.RLock()
	loaded, seen, handedOut := k.filter != nil, k.filter != nil && k.filter.Test(idKey(&buf, id)), k.handedOut
	k.mu.RUnlock()
	switch {
	case !loaded || seen:
		return mayExist
	case id <= handedOut-knownCatchUpOverlap:
		return absent
	case k.budget.Allow(ctx):
		// Perhaps created on another instance a moment ago, or inserted
		// with an id of its own above the sequence; or, a little below
		// handedOut, an id whose transaction committed after the filter
		// last read the table (ids are handed out before their
		// transactions commit).
		return lookUp
	default:
		// Over budget: answer now, and have the upkeep look for new ids
		// (at most once a second, from knownCatchUpOverlap below handedOut),
		// so a product created elsewhere is found within a second even
		// during a flood.
		select {
		case k.wake <- struct{}{}:
		default:
		}
		return overBudget
	}
}

func (k *knownIDs) loaded() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.filter != nil
}

// add records an id that exists (created here, or found by a lookup). It
// leaves handedOut alone: ids between it and a new one (created meanwhile
// on other instances) stay above the line and may still be looked up.
func (k *knownIDs) add(id int64) {
	var buf [8]byte
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.filter != nil && !k.filter.TestAndAdd(idKey(&buf, id)) {
		k.ids++
	}
}

// newFilter sizes a filter for n ids, within knownMaxBits, its bits outside
// the Go heap (filterWords); free releases them.
func newFilter(n uint) (f *bloom.BloomFilter, free func(), err error) {
	m, hashes := bloom.EstimateParameters(n, knownFalsePositive)
	m = min(m, knownMaxBits)
	words, free, err := filterWords(int((m + 63) / 64)) // #nosec G115 -- at most knownMaxBits/64
	if err != nil {
		return nil, nil, err
	}
	return bloom.FromWithM(words, m, hashes), free, nil
}

// stop drops the filter and releases its bits: every id takes the normal
// path after it.
func (k *knownIDs) stop() {
	k.mu.Lock()
	free := k.free
	k.filter, k.free = nil, nil
	k.mu.Unlock()
	if free != nil {
		free()
	}
}

// idKey writes the bytes the filter hashes for id into buf: one buffer per
// call site, so a load of millions of ids makes no garbage per id.
func idKey(buf *[8]byte, id int64) []byte {
	binary.BigEndian.PutUint64(buf[:], uint64(id)) // #nosec G115 -- bytes of the id for hashing: any bijection will do
	return buf[:]
}
