package handlers

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

// HTTPCache is the freshness policy product reads announce to browsers and
// CDNs (RFC 9111, RFC 5861). It is the stampede protection one tier out: a
// CDN that honours stale-while-revalidate sends one revalidation for a hot
// product however many clients ask, and answers them all from its copy.
// The zero value announces nothing cacheable (no-store).
type HTTPCache struct {
	Enabled bool
	// MaxAge is how long a copy is fresh (the cache's soft TTL).
	MaxAge time.Duration
	// StaleWhileRevalidate is how long after MaxAge a copy may still be
	// served while one request revalidates it (hard TTL − soft TTL); 0
	// leaves the directive out.
	StaleWhileRevalidate time.Duration
	// StaleIfError is how long after MaxAge a copy may be served when this
	// service answers 5xx or cannot be reached.
	StaleIfError time.Duration
	// NotFoundMaxAge is how long a 404 may be reused (the negative TTL).
	NotFoundMaxAge time.Duration
}

// noStore is every response's default: writes, orders, reports, errors and
// probes must never be served from a shared cache. Product reads override it.
//
// Every response shares one value slice, set by map index in net/http's
// spelling: c.Header's re-spelling and one-value slice were an allocation
// per request. Its capacity is its length, so a later Add appends to a
// copy; nothing writes into a header's values in place.
func noStore() gin.HandlerFunc {
	v := []string{"no-store"}
	return func(c *gin.Context) {
		c.Writer.Header()["Cache-Control"] = v[:1:1]
		c.Next()
	}
}

// found is the Cache-Control of a product that exists.
func (h HTTPCache) found() string {
	if !h.Enabled {
		return "no-store"
	}
	cc := fmt.Sprintf("public, max-age=%d", seconds(h.MaxAge))
	if s := seconds(h.StaleWhileRevalidate); s > 0 {
		cc += fmt.Sprintf(", stale-while-revalidate=%d", s)
	}
	if s := seconds(h.StaleIfError); s > 0 {
		cc += fmt.Sprintf(", stale-if-error=%d", s)
	}
	return cc
}

// ownRequestID keeps a client's X-Request-ID off an answer shared caches
// may store and serve to others (see middleware.OwnRequestID).
func (h *Products) ownRequestID(c *gin.Context) {
	if h.public {
		middleware.OwnRequestID(c)
	}
}

// notFound is the Cache-Control of a 404: reusable briefly, never stale, so
// a product created a moment later shows up soon.
func (h HTTPCache) notFound() string {
	if !h.Enabled {
		return "no-store"
	}
	return fmt.Sprintf("public, max-age=%d", seconds(h.NotFoundMaxAge))
}

func seconds(d time.Duration) int64 { return int64(max(0, d/time.Second)) }

// validators adds what a client needs to revalidate a product: its ETag,
// its Last-Modified, and the Age of the copy we serve (addAge).
func validators(hs *headers, etag, lastModified string, age time.Duration) {
	hs.add("Etag", etag)
	if lastModified != "" {
		hs.add("Last-Modified", lastModified)
	}
	addAge(hs, age)
}

// addAge adds the Age of the copy we serve, in whole seconds, when it is
// one or more. What the Age is (so that max-age − Age is the entry's time
// left here) is Products.age's rule.
func addAge(hs *headers, age time.Duration) {
	if s := seconds(age); s > 0 {
		hs.add("Age", strconv.FormatInt(s, 10))
	}
}

// productJSON returns p's response body and its strong entity tag (RFC
// 9110 §8.8.3), from one encoding. The tag hashes exactly the bytes the
// body carries, so two equal tags mean two byte-identical bodies, and a
// browser or a CDN may revalidate with it whichever instance or cache tier
// answered.
func productJSON(p repo.Product) (body []byte, etag string) {
	body, _ = json.Marshal(p) // cannot fail: plain fields only
	h := fnv.New64a()
	h.Write(body) // #nosec G104 -- hash.Hash.Write never returns an error
	return body, `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}
