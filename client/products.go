package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Product is the API's product.
type Product struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	PriceCents int64     `json:"price_cents"`
	UpdatedAt  time.Time `json:"updated_at"`
	// ETag is the answer's ETag header: pass it as ProductUpdate.IfMatch
	// to update only the version read.
	ETag string `json:"-"`
}

// CacheStatus is the X-Cache header of a product read.
type CacheStatus string

// The values of X-Cache.
const (
	CacheHit   CacheStatus = "HIT"   // served from the cache, fresh
	CacheMiss  CacheStatus = "MISS"  // loaded from the database
	CacheStale CacheStatus = "STALE" // served stale while one refresh runs
)

// Page is one page of ListProducts.
type Page struct {
	Items []Product `json:"items"`
	// NextAfter is the `after` of the next page; nil on the last page.
	NextAfter *int64 `json:"next_after"`
}

// NewProduct is the input of CreateProduct.
type NewProduct struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Stock      int32  `json:"stock"`
}

// ProductUpdate is the input of UpdateProduct.
type ProductUpdate struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	// StockAdjustment, when set, adds to the stock (negative removes);
	// nil leaves it unchanged. The service has no "set the stock": that
	// would undo orders placed since the caller read the product.
	StockAdjustment *int32 `json:"stock_adjustment,omitempty"`
	// IfMatch, when set, is sent as If-Match: the update happens only if
	// the product still has this ETag (412 otherwise). A retried update
	// whose first attempt was applied gets 412 too.
	IfMatch string `json:"-"`
}

// GetProduct reads one product and says how the cache answered.
func (c *Client) GetProduct(ctx context.Context, id int64) (Product, CacheStatus, error) {
	p, h, err := c.product(ctx, call{method: http.MethodGet, path: productPath(id), idempotent: true})
	if err != nil {
		return Product{}, "", err
	}
	return p, CacheStatus(h.Get("X-Cache")), nil
}

// ListProducts reads the page of at most limit products (0: the server's
// default) with ids above after (0: from the start).
func (c *Client) ListProducts(ctx context.Context, limit int, after int64) (Page, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	cl := call{method: http.MethodGet, path: "/products", query: q, idempotent: true}
	var page Page
	return page, c.json(ctx, cl, &page)
}

// CreateProduct creates a product; it needs WithAPIKey. POST /products
// has no idempotency key, so it is retried only when the service refused
// it unread (408, 429, 503, or no connection): a lost answer is an error,
// never a second product.
func (c *Client) CreateProduct(ctx context.Context, in NewProduct) (Product, error) {
	p, _, err := c.product(ctx, call{method: http.MethodPost, path: "/products", body: jsonBody(in)})
	return p, err
}

// UpdateProduct replaces a product's name and price (and adjusts its stock
// when asked); it needs WithAPIKey. Setting a name and a price is
// idempotent, so it is retried like a read; a stock adjustment is not (a
// retry of an applied one would adjust twice), so it is retried like a
// POST, unless IfMatch makes a repeat fail with 412 instead.
func (c *Client) UpdateProduct(ctx context.Context, id int64, in ProductUpdate) (Product, error) {
	idempotent := in.StockAdjustment == nil || in.IfMatch != ""
	cl := call{method: http.MethodPut, path: productPath(id), body: jsonBody(in), idempotent: idempotent}
	if in.IfMatch != "" {
		cl.header = http.Header{"If-Match": {in.IfMatch}}
	}
	p, _, err := c.product(ctx, cl)
	return p, err
}

func productPath(id int64) string { return fmt.Sprintf("/products/%d", id) }

// product sends cl and decodes its answer as a Product carrying the
// answer's ETag; the headers are returned for what else the caller reads.
func (c *Client) product(ctx context.Context, cl call) (Product, http.Header, error) {
	ans, err := c.do(ctx, cl)
	if err != nil {
		return Product{}, nil, err
	}
	var p Product
	if err := decode(cl, ans, &p); err != nil {
		return Product{}, nil, err
	}
	p.ETag = ans.header.Get("ETag")
	return p, ans.header, nil
}

// json sends cl and decodes its 2xx answer into v.
func (c *Client) json(ctx context.Context, cl call, v any) error {
	ans, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	return decode(cl, ans, v)
}
