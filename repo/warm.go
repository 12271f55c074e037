package repo

import (
	"context"
	"time"

	"github.com/stampede-guard/api/cache"
)

// Warm-up pacing: small batches, well below what the pool can serve, so a
// deploy's warm-up never competes with live traffic for connections.
const (
	warmPerSecond = 200
	warmBatch     = 10
)

// Warm caches the warm-up list (HOT_KEYS) before the instance reports ready,
// within WarmBudget: a Redis slow enough to cost each key a second but not
// to fail it would otherwise hold readiness for as many seconds as there
// are keys. Keys left when the budget ends are loaded on their first read.
func (p *Products) Warm(ctx context.Context, ids []int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, WarmBudget(len(ids)))
	defer cancel()
	return p.cache.Warm(ctx, keys(ids), p.loaderFor(ids), warmPerSecond, warmBatch)
}

// WarmBudget is how long the warm-up of n keys may hold readiness: twice
// its pacing (warmPerSecond), plus 10 s for the loads themselves.
func WarmBudget(n int) time.Duration {
	return 10*time.Second + 2*time.Duration(n)*time.Second/warmPerSecond
}

// KeepFresh reloads the warm-up list every period (below the soft TTL) for
// as long as the cache lives; one instance per period does the work.
func (p *Products) KeepFresh(ids []int64, period time.Duration) {
	p.cache.StartRefreshAhead("refresh-ahead:products", period, keys(ids), p.loaderFor(ids))
}

// RepairStatic starts the repair job of the never-expiring products (the
// cache's Config.Static, named with Keys): every period one instance
// reloads them, restoring any lost or changed behind the cache's back.
func (p *Products) RepairStatic(ids []int64, period time.Duration) {
	p.cache.StartRepair("repair:static-products", period, p.loaderFor(ids))
}

// readCounter counts reads by key: a hotkeys.Detector, which the cache
// asks (as its HotSet) which keys are hot.
type readCounter interface{ Observe(key string) }

// CountReads has every read of a product that may exist counted under its
// cache key by r, so hot products are found as they turn hot. Reads of ids
// the unknown-id filter answers never reach the cache and are not counted.
// Call it once, before serving.
func (p *Products) CountReads(r readCounter) { p.reads = r }

// Keys returns the cache keys of product ids, e.g. for cache.Config.Static.
func Keys(ids []int64) []string { return keys(ids) }

func keys(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = Key(id)
	}
	return out
}

// loaderFor maps a key back to the load of its product.
func (p *Products) loaderFor(ids []int64) func(string) cache.LoadFunc {
	byKey := make(map[string]int64, len(ids))
	for _, id := range ids {
		byKey[Key(id)] = id
	}
	return func(key string) cache.LoadFunc {
		id := byKey[key]
		return func(ctx context.Context) ([]byte, error) { return p.load(ctx, id) }
	}
}
