package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/loglimit"
)

// Products reads and writes products. Reads of one product go through the
// cache, whose mode decides how many database queries a hot key costs.
type Products struct {
	pool    *db.Pool
	cache   *cache.Cache
	log     *slog.Logger
	known   *knownIDs    // nil: no penetration defence (FilterUnknownIDs)
	reads   readCounter  // nil: reads not counted (CountReads)
	seen    verified     // payloads already verified, so a hot read skips decoding
	refused atomic.Int64 // cached payloads that failed verification (RefusedEntries)
	// lostInvalidations keeps "invalidation failed" to a line a second:
	// while Redis is away every write would log one.
	lostInvalidations loglimit.PerSecond
}

// NewProducts wires the products repository.
func NewProducts(pool *db.Pool, c *cache.Cache, log *slog.Logger) *Products {
	return &Products{pool: pool, cache: c, log: log, seen: newVerified()}
}

// Freshness says how a product read was answered, for the X-Cache and
// Cache-Status headers.
type Freshness struct {
	Status cache.Status
	L1     bool
	TTL    time.Duration // freshness left; negative when stale
	Age    time.Duration // since the value was loaded from PostgreSQL
	// Unsure marks a "not found" that was not looked up (an unknown id past
	// the lookup budget, not in the cache): true for now as far as this
	// instance knows, but not an answer anyone should store.
	Unsure bool
}

// freshnessOf is what a cache answer says of its freshness.
func freshnessOf(res cache.Result) Freshness {
	return Freshness{Status: res.Status, L1: res.L1, TTL: res.TTL, Age: res.Age}
}

// Hit reports a fresh answer from L1 or Redis.
func (f Freshness) Hit() bool { return f.Status == cache.Hit }

// Stale reports an answer past its soft expiry, served while it refreshes.
func (f Freshness) Stale() bool { return f.Status == cache.Stale }

// Key is the Redis key of product id. The id is a hash tag, so the entry and
// its lock share a Redis Cluster slot.
func Key(id int64) string { return KeyPrefix + "{" + strconv.FormatInt(id, 10) + "}" }

// KeyPrefix starts every product key (and its hot-key copies): the prefix
// Redis CLIENT TRACKING watches for L1 invalidation.
const KeyPrefix = "product:v1:"

// Get returns product id through the cache: fetch, verify, return. An
// absent product is ErrNotFound (and is cached negatively).
func (p *Products) Get(ctx context.Context, id int64) (Product, Freshness, error) {
	v := mayExist
	if p.known != nil {
		v = p.known.check(ctx, id)
	}
	switch v {
	case absent:
		// Never created: no query, no Redis key (see knownIDs).
		return Product{}, Freshness{Status: cache.Hit}, fmt.Errorf("product %d: %w", id, ErrNotFound)
	case overBudget:
		return p.cachedOnly(ctx, id)
	}
	key := Key(id)
	if p.reads != nil {
		p.reads.Observe(key)
	}
	res, err := p.cache.Fetch(ctx, key, p.loader(id))
	if err != nil {
		return Product{}, Freshness{}, unavailable(fmt.Errorf("get product %d: %w", id, err), p.pool)
	}
	pr, res, err := p.verifyEntry(ctx, id, res)
	if err != nil {
		return Product{}, Freshness{}, err
	}
	f := freshnessOf(res)
	if res.Absent {
		return Product{}, f, fmt.Errorf("product %d: %w", id, ErrNotFound)
	}
	if v == lookUp {
		p.known.add(id)
	}
	return pr, f, nil
}

// cachedOnly answers an id the filter does not know, past the lookup
// budget, from the cache alone: a product created on another instance a
// moment ago is in Redis (its write put it there) before this instance's
// filter has read it from the table. What the cache does not hold is "not
// found" without a query, marked Unsure: a guess, which the handler tells
// no one to store. An entry that fails verification is not reloaded here
// (that would be a query past the budget): it too is a guess.
func (p *Products) cachedOnly(ctx context.Context, id int64) (Product, Freshness, error) {
	res, found, err := p.cache.Peek(ctx, Key(id))
	if err == nil && found {
		if pr, bad := p.seen.check(res, id); bad == nil {
			f := freshnessOf(res)
			if res.Absent {
				return Product{}, f, fmt.Errorf("product %d: %w", id, ErrNotFound)
			}
			p.known.add(id)
			return pr, f, nil
		}
	}
	return Product{}, Freshness{Status: cache.Miss, Unsure: true}, fmt.Errorf("product %d: %w", id, ErrNotFound)
}

// loader is the cache's way to load product id on a miss.
func (p *Products) loader(id int64) cache.LoadFunc {
	return func(ctx context.Context) ([]byte, error) { return p.load(ctx, id) }
}

// load is the single query a cache miss may cost.
func (p *Products) load(ctx context.Context, id int64) ([]byte, error) {
	return p.loadBy(ctx, id, selectProduct)
}

// loadBy is load with its own query (selectProduct, or selectSettled).
func (p *Products) loadBy(ctx context.Context, id int64, query string) ([]byte, error) {
	var pr Product
	err := p.with(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, query, id).Scan(pr.fields()...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, cache.ErrAbsent
	}
	if err != nil {
		return nil, fmt.Errorf("select product %d: %w", id, err)
	}
	return json.Marshal(pr.inUTC())
}

// List returns up to limit products with id > after, in id order (keyset
// pagination: every page costs the same, however deep).
func (p *Products) List(ctx context.Context, after int64, limit int) (Page, error) {
	limit = max(1, limit) // the handler bounds it; a zero would panic below
	page := Page{Items: make([]Product, 0, limit)}
	err := p.with(ctx, func(conn db.Conn) error {
		rows, err := conn.Query(ctx,
			`SELECT `+productColumns+` FROM products WHERE id > $1 ORDER BY id LIMIT $2`, after, limit+1)
		if err != nil {
			return err
		}
		page.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Product, error) {
			var pr Product
			err := row.Scan(pr.fields()...)
			return pr.inUTC(), err
		})
		return err
	})
	if err != nil {
		return Page{}, unavailable(fmt.Errorf("list products: %w", err), p.pool)
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		next := page.Items[limit-1].ID
		page.NextAfter = &next
	}
	return page, nil
}

// productColumns and fields keep every query's column list and its Scan
// targets in one place.
const productColumns = `id, name, price_cents, updated_at`

// selectProduct is the query behind every cache load of a product.
const selectProduct = `SELECT ` + productColumns + ` FROM products WHERE id = $1`

// selectSettled waits for a write of the row that may still be committing
// (its row lock) before it reads: the load after an unknown outcome.
const selectSettled = selectProduct + ` FOR SHARE`

// Statements are the queries worth preparing on every new connection
// (db.Config.Prepare): the cache's load, which a cold hot key waits on.
func Statements() []string { return []string{selectProduct} }

func (p *Product) fields() []any { return []any{&p.ID, &p.Name, &p.PriceCents, &p.UpdatedAt} }

// inUTC makes the representation independent of the server's time zone, so
// every instance renders (and hashes) the same body.
func (p Product) inUTC() Product {
	p.UpdatedAt = p.UpdatedAt.UTC()
	return p
}

// with runs fn on the main pool, retrying transient failures.
func (p *Products) with(ctx context.Context, fn func(db.Conn) error) error {
	return retry(ctx, func() error { return p.pool.With(ctx, fn) })
}
