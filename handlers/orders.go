package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/middleware"
	"github.com/stampede-guard/api/repo"
)

type orderStore interface {
	Create(ctx context.Context, in repo.NewOrder) (repo.Order, bool, error)
	Get(ctx context.Context, id int64, token string) (repo.Order, error)
}

// Orders serves POST /orders (checkout) and GET /orders/:id.
type Orders struct {
	store       orderStore
	maxQuantity int32
	errs        errorLog
}

// NewOrders builds the checkout handler; one order may hold at most
// maxQuantity items (ORDER_MAX_QUANTITY), so one request cannot empty a
// product. maxQuantity < 1 means DefaultMaxQuantity; above an int32 (the
// column's type) it is an int32's most, which config never goes past.
func NewOrders(store orderStore, maxQuantity int, log *slog.Logger) *Orders {
	q := int32(DefaultMaxQuantity)
	switch {
	case maxQuantity > math.MaxInt32:
		q = math.MaxInt32
	case maxQuantity >= 1:
		q = int32(maxQuantity)
	}
	return &Orders{store: store, maxQuantity: q, errs: newErrorLog(log)}
}

type orderBody struct {
	ProductID *int64 `json:"product_id"`
	Quantity  *int32 `json:"quantity"`
}

const (
	// DefaultMaxQuantity is ORDER_MAX_QUANTITY's default.
	DefaultMaxQuantity = 10
	maxIdempotencyKey  = 255
	// orderTokenHeader carries an order's token where a query string
	// would be logged (proxies, tracing): an alternative to ?token=.
	orderTokenHeader = "X-Order-Token"
)

func (h *Orders) create(c *gin.Context) {
	var b orderBody
	if err := decodeJSON(c, &b); err != nil {
		writeError(c, h.errs, err)
		return
	}
	switch {
	case b.ProductID == nil || b.Quantity == nil:
		writeError(c, h.errs, badRequest("product_id and quantity are required"))
		return
	case *b.ProductID <= 0:
		writeError(c, h.errs, badRequest("product_id must be a positive integer"))
		return
	case *b.Quantity <= 0:
		writeError(c, h.errs, badRequest(fmt.Sprintf("quantity must be from 1 to %d per order", h.maxQuantity)))
		return
	}
	key, keyed, err := headerOnce(c, "Idempotency-Key")
	if err == nil && keyed && (key == "" || len(key) > maxIdempotencyKey || !printableASCII(key)) {
		err = badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters (letters, digits, punctuation; no spaces), " +
			"or left out")
	}
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	order, replayed, err := h.store.Create(c.Request.Context(), repo.NewOrder{
		ProductID: *b.ProductID, Quantity: *b.Quantity, IdempotencyKey: key,
		// Keys are the caller's own: an API key's id when a valid one came
		// with the request (Auth.Identify), the anonymous scope otherwise.
		Scope: middleware.KeyID(c),
		// Above it: 400, or 409 where the product has not that much (the
		// repository checks, and sells nothing either way).
		MaxQuantity: h.maxQuantity,
	})
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	if replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	loc := fmt.Sprintf("/orders/%d", order.ID)
	if order.Token != "" { // none only for a replay of an order placed before tokens
		loc += "?token=" + url.QueryEscape(order.Token)
	}
	c.Header("Location", loc)
	c.JSON(http.StatusCreated, order)
}

// printableASCII reports whether s holds only visible ASCII characters, the
// alphabet of keys clients generate (UUIDs, random tokens).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// orderToken is the order token of a read: the X-Order-Token header, else
// ?token=; either given twice is refused.
func orderToken(c *gin.Context) (string, error) {
	if v, _, err := headerOnce(c, orderTokenHeader); err != nil || v != "" {
		return v, err
	}
	token, _, err := queryOnce(c, "token")
	return token, err
}

// get answers the order a checkout created (the Location of POST /orders)
// to the holder of its token: 401 without one, and the same 404 for a wrong
// token as for an absent order, so ids cannot be enumerated.
func (h *Orders) get(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	// One token, given once: with two, a proxy or log in front may read
	// the other one (as with a query parameter or a JSON key given twice).
	token, err := orderToken(c)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	if token == "" {
		c.Header("WWW-Authenticate", `OrderToken realm="stampede-guard"`)
		abort(c, http.StatusUnauthorized, "an order is read with its token: follow the Location of POST /orders, or send X-Order-Token")
		return
	}
	order, err := h.store.Get(c.Request.Context(), id, token)
	if err != nil {
		writeError(c, h.errs, err)
		return
	}
	c.JSON(http.StatusOK, order)
}
