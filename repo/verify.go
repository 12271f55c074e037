package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/stampede-guard/api/cache"
)

// verify decodes a cached product and checks it is product id. A cached
// "absent" is valid as it is.
//
// The decoding is strict: the payload must be exactly the bytes load
// stores for the product it decodes to (canonical), which refuses what
// encoding/json alone lets through — trailing data, a duplicate field
// (where the last one would win), a field name in another case, other
// spacing or escapes, invalid UTF-8 (decoded as U+FFFD) — and the product
// must hold the database's own invariants. A refused payload is reloaded
// by Get, never served.
func verify(res cache.Result, id int64) (Product, error) {
	if res.Absent {
		return Product{}, nil
	}
	var pr Product
	dec := json.NewDecoder(bytes.NewReader(res.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pr); err != nil {
		return Product{}, fmt.Errorf("decode cached product %d: %w", id, err)
	}
	if pr.ID != id {
		return Product{}, fmt.Errorf("cached entry of product %d holds product %d", id, pr.ID)
	}
	if err := pr.valid(); err != nil {
		return Product{}, fmt.Errorf("cached product %d: %w", id, err)
	}
	if canon, err := json.Marshal(pr); err != nil || !bytes.Equal(canon, res.Value) {
		return Product{}, fmt.Errorf("cached product %d is not in canonical form (trailing data, duplicate or renamed fields, bad encoding)", id)
	}
	return pr, nil
}

// verifyEntry returns the product a fetched entry holds, and the entry it
// came from, once verified: a cached payload that does not decode as a
// product, or is another product's, is never served (nor handed to a CDN
// as public) and never a 500. It is counted, deleted and fetched again; if
// that fails verification too (rewritten meanwhile, or Redis unwritable),
// the product is answered from PostgreSQL, uncached. Such an entry comes
// from a bug, an old format, or someone who can write to Redis.
func (p *Products) verifyEntry(ctx context.Context, id int64, res cache.Result) (Product, cache.Result, error) {
	pr, bad := p.seen.check(res, id)
	if bad == nil {
		return pr, res, nil
	}
	p.refused.Add(1)
	p.log.Warn("cached product failed verification; deleting and reloading", "product", id, "err", bad)
	key := Key(id)
	if err := p.cache.Invalidate(ctx, key); err != nil {
		p.log.Warn("could not delete the bad entry", "product", id, "err", err)
	}
	res, err := p.cache.Fetch(ctx, key, p.loader(id))
	if err != nil {
		return Product{}, res, unavailable(fmt.Errorf("get product %d: %w", id, err), p.pool)
	}
	if pr, bad = p.seen.check(res, id); bad == nil {
		return pr, res, nil
	}
	p.log.Warn("cached product failed verification twice; answering from the database", "product", id, "err", bad)
	b, err := p.load(ctx, id)
	switch {
	case errors.Is(err, cache.ErrAbsent):
		return Product{}, cache.Result{Absent: true, Status: cache.Miss}, nil
	case err != nil:
		return Product{}, res, unavailable(fmt.Errorf("get product %d: %w", id, err), p.pool)
	}
	res = cache.Result{Value: b, Status: cache.Miss}
	pr, bad = verify(res, id)
	return pr, res, bad
}

// RefusedEntries counts the cached payloads Get refused (not a product,
// another product's, not canonical, or breaking an invariant), each one
// deleted and reloaded rather than served.
func (p *Products) RefusedEntries() int64 { return p.refused.Load() }

// maxNameChars is the database's bound on a product name
// (migrations/00001_products.sql: length(name) BETWEEN 1 AND 200).
const maxNameChars = 200

// valid checks the invariants the products table enforces, so nothing is
// served from the cache that the database could not hold.
func (p Product) valid() error {
	switch {
	case p.PriceCents < 0:
		return fmt.Errorf("negative price %d", p.PriceCents)
	case p.Name == "" || utf8.RuneCountInString(p.Name) > maxNameChars:
		return fmt.Errorf("name of %d characters, want 1 to %d", utf8.RuneCountInString(p.Name), maxNameChars)
	case !utf8.ValidString(p.Name):
		return errors.New("name is not valid UTF-8")
	}
	return nil
}

// verifiedSize bounds the products whose last verified payload is kept:
// the hot set, which is what repeats.
const verifiedSize = 4096

// verified remembers, per product, the last payload that passed verify and
// what it decoded to. A hot key answered from L1 hands back the same bytes
// on every read; comparing them (a memcmp of ~100 bytes) instead of
// strictly decoding them again is most of what a cached read costs in this
// package. Anything that differs by one byte is verified afresh, so the
// guarantee is unchanged: nothing is served that did not pass verify.
type verified struct {
	last *lru.Cache[int64, verifiedPayload]
}

type verifiedPayload struct {
	payload []byte // owned copy: the cache's slice may be reused
	product Product
}

func newVerified() verified {
	last, _ := lru.New[int64, verifiedPayload](verifiedSize) // errors only for a size < 1
	return verified{last: last}
}

// check is verify, skipped when res carries the payload last verified for id.
func (v verified) check(res cache.Result, id int64) (Product, error) {
	if res.Absent {
		return Product{}, nil
	}
	if seen, ok := v.last.Get(id); ok && bytes.Equal(seen.payload, res.Value) {
		return seen.product, nil
	}
	pr, err := verify(res, id)
	if err != nil {
		v.last.Remove(id)
		return Product{}, err
	}
	v.last.Add(id, verifiedPayload{payload: bytes.Clone(res.Value), product: pr})
	return pr, nil
}
