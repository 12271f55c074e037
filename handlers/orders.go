package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/repo"
)

type orderStore interface {
	Create(ctx context.Context, in repo.NewOrder) (repo.Order, bool, error)
	Get(ctx context.Context, id int64) (repo.Order, error)
}

// Orders serves POST /orders (checkout) and GET /orders/:id.
type Orders struct {
	store orderStore
	log   *slog.Logger
}

// NewOrders builds the checkout handler.
func NewOrders(store orderStore, log *slog.Logger) *Orders { return &Orders{store: store, log: log} }

type orderBody struct {
	ProductID *int64 `json:"product_id"`
	Quantity  *int32 `json:"quantity"`
}

const (
	maxQuantity       = 10_000
	maxIdempotencyKey = 255
)

func (h *Orders) create(c *gin.Context) {
	var b orderBody
	if err := decodeJSON(c, &b); err != nil {
		writeError(c, h.log, err)
		return
	}
	switch {
	case b.ProductID == nil || b.Quantity == nil:
		writeError(c, h.log, badRequest("product_id and quantity are required"))
		return
	case *b.ProductID <= 0:
		writeError(c, h.log, badRequest("product_id must be a positive integer"))
		return
	case *b.Quantity <= 0 || *b.Quantity > maxQuantity:
		writeError(c, h.log, badRequest("quantity must be from 1 to 10000"))
		return
	}
	key := c.GetHeader("Idempotency-Key")
	if len(key) > maxIdempotencyKey || !printableASCII(key) {
		writeError(c, h.log, badRequest("Idempotency-Key must be at most 255 printable ASCII characters"))
		return
	}
	order, replayed, err := h.store.Create(c.Request.Context(), repo.NewOrder{
		ProductID: *b.ProductID, Quantity: *b.Quantity, IdempotencyKey: key,
	})
	if err != nil {
		writeError(c, h.log, err)
		return
	}
	if replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	c.Header("Location", fmt.Sprintf("/orders/%d", order.ID))
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

// get answers the order a checkout created (the Location of POST /orders).
func (h *Orders) get(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		writeError(c, h.log, err)
		return
	}
	order, err := h.store.Get(c.Request.Context(), id)
	if err != nil {
		writeError(c, h.log, err)
		return
	}
	c.JSON(http.StatusOK, order)
}
