package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/repo"
)

// productStore is what the product routes need from the repository.
type productStore interface {
	Get(ctx context.Context, id int64) (repo.Product, repo.Freshness, error)
	List(ctx context.Context, after int64, limit int) (repo.Page, error)
	Create(ctx context.Context, in repo.NewProduct) (repo.Product, error)
	Update(ctx context.Context, id int64, in repo.ProductUpdate) (repo.Product, error)
}

// Products serves /products.
type Products struct {
	store productStore
	// The Cache-Control of a found and of an absent product, built once
	// from the HTTPCache policy.
	ccFound, ccNotFound string
	public              bool // both are public: shared caches may store them
	// Their max-age, from which Age is counted (age).
	maxAgeFound, maxAgeNotFound time.Duration
	errs                        errorLog
	// The fast path of a hot read (fastpath.go): Last-Modified values and
	// answers, each formatted once rather than per read.
	dates  httpDates
	bodies productBodies
}

// NewProducts builds the product handlers; hc is what product reads tell
// browsers and CDNs about caching them.
func NewProducts(store productStore, hc HTTPCache, log *slog.Logger) *Products {
	return &Products{store: store, ccFound: hc.found(), ccNotFound: hc.notFound(), public: hc.Enabled,
		maxAgeFound: hc.MaxAge, maxAgeNotFound: hc.NotFoundMaxAge, errs: newErrorLog(log)}
}

func (h *Products) get(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	p, f, err := h.store.Get(c.Request.Context(), id)
	if isNotFound(err) {
		var hs headers // a product answer's headers, set at once (fastpath.go)
		cc := h.ccNotFound
		if f.Unsure {
			cc = "no-store" // a guess (repo.Freshness): no one may keep it
		}
		h.freshness(c, &hs, f, cc)
		addAge(&hs, h.age(f, h.maxAgeNotFound)) // as a product's
		hs.set(c)
	}
	if err != nil {
		writeError(c, h.errs, err) // any other error stays no-store
		return
	}
	var hs headers
	h.freshness(c, &hs, f, h.ccFound)
	body, etag := h.bodies.json(p) // productJSON, once per version (fastpath.go)
	now := time.Now()
	lastModified := ""
	if dateValidates(p.UpdatedAt, now) {
		lastModified = h.dates.lastModified(p.UpdatedAt)
	}
	validators(&hs, etag, lastModified, h.age(f, h.maxAgeFound))
	// Answered from L1 or Redis like any read: a revalidation costs no query.
	switch {
	case readPreconditionFailed(c.Request, etag, p.UpdatedAt, now):
		// Not hs: a refusal is no copy of the product, and stays no-store.
		writeError(c, h.errs, &requestError{status: http.StatusPreconditionFailed,
			msg: "a precondition failed: If-Match does not name the product's current ETag, or it changed after If-Unmodified-Since"})
		return
	case notModified(c.Request, etag, p.UpdatedAt, now):
		hs.answer(c, http.StatusNotModified, nil)
		return
	}
	hs.add("Content-Type", jsonType)
	hs.answer(c, http.StatusOK, body)
}

// age is the Age of an answer whose Cache-Control says maxAge: what makes
// max-age − Age the time the entry has left here (f.TTL), so a downstream
// copy never outlives this cache's. With max-age left to follow the cache
// (the entry's own freshness) that is the time since PostgreSQL was read,
// plus any TTL_JITTER cut; with a shorter one (HTTP_MAX_AGE, or a 404's
// max-age capped by it) a copy is fresh downstream for at most max-age, and
// a 404 loaded a moment ago does not arrive stale. Age is whole seconds:
// it is rounded up, so a copy never outlives ours by the fraction, except
// in an entry's first second, where a fresh load says no Age, not "Age: 1":
// with max-age=1 (a 1 s soft TTL) that would make every copy stale on
// arrival, and whole-second HTTP cannot say "0.99". So in that second a
// downstream copy may outlive ours by less than a second. An answer shared
// caches may not store keeps the time since the load.
func (h *Products) age(f repo.Freshness, maxAge time.Duration) time.Duration {
	if !h.public || f.Unsure {
		return f.Age
	}
	age := max(0, maxAge-f.TTL)
	if age >= time.Second {
		age = (age + time.Second - 1).Truncate(time.Second)
	}
	return age
}

// freshness adds what a product read says about its freshness: how the
// cache answered (cacheHeaders) and cc, the Cache-Control of the answer.
func (h *Products) freshness(c *gin.Context, hs *headers, f repo.Freshness, cc string) {
	cacheHeaders(hs, f)
	hs.add("Cache-Control", cc)
	h.ownRequestID(c)
}

// cacheHeaders reports the cache's answer in X-Cache and in the standard
// Cache-Status header (RFC 9211).
func cacheHeaders(hs *headers, f repo.Freshness) {
	hs.add("X-Cache", f.Status.String())
	ttl := int64(math.Round(f.TTL.Seconds()))
	// Concatenation, not fmt: this runs on every product read.
	switch {
	case f.Unsure:
		// Not in the cache, and not forwarded to the database (no fwd,
		// RFC 9211): a guess.
		hs.add("Cache-Status", "stampede-guard; detail=unknown-id-not-looked-up")
	case f.Hit():
		hs.add("Cache-Status", "stampede-guard; hit; ttl="+strconv.FormatInt(ttl, 10))
	case f.Stale():
		// A negative ttl is how RFC 9211 says "served stale".
		hs.add("Cache-Status", "stampede-guard; hit; ttl="+strconv.FormatInt(min(ttl, -1), 10)+"; detail=revalidating")
	default:
		hs.add("Cache-Status", "stampede-guard; fwd=miss; stored; ttl="+strconv.FormatInt(ttl, 10))
	}
}

func (h *Products) list(c *gin.Context) {
	limit, err := queryInt(c, "limit", 20, 1, 100)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	after, err := queryInt(c, "after", 0, 0, math.MaxInt64)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	page, err := h.store.List(c.Request.Context(), after, int(limit))
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	c.JSON(http.StatusOK, page)
}

func (h *Products) create(c *gin.Context) {
	b, err := readProductBody(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	in := repo.NewProduct{Name: *b.Name, PriceCents: *b.PriceCents}
	if b.Stock != nil {
		in.Stock = *b.Stock
	}
	p, err := h.store.Create(c.Request.Context(), in)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	c.Header("Location", fmt.Sprintf("/products/%d", p.ID))
	writeProduct(c, http.StatusCreated, p)
}

func (h *Products) update(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	precondition, err := writePreconditions(c.Request)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	b, err := readProductBody(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	p, err := h.store.Update(c.Request.Context(), id, repo.ProductUpdate{
		Name: *b.Name, PriceCents: *b.PriceCents, StockDelta: b.StockAdjustment, Precondition: precondition,
	})
	if err != nil {
		writeError(c, h.errs, preconditionError(c.Request, err))
		return
	}
	writeProduct(c, http.StatusOK, p)
}

// jsonType is the Content-Type gin's c.JSON sets, kept for bodies encoded
// ahead (a product's body is hashed for its ETag first).
const jsonType = "application/json; charset=utf-8"

// writeProduct answers with p and its ETag, both from one encoding.
func writeProduct(c *gin.Context, status int, p repo.Product) {
	body, etag := productJSON(p)
	c.Header("Etag", etag) // canonical spelling: see headers
	c.Data(status, jsonType, body)
}
