package client

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"time"
)

// Order is an order the API created.
type Order struct {
	ID         int64     `json:"id"`
	ProductID  int64     `json:"product_id"`
	Quantity   int32     `json:"quantity"`
	TotalCents int64     `json:"total_cents"`
	CreatedAt  time.Time `json:"created_at"`
	// Token proves the order is the caller's: GetOrder needs it. Only
	// CreateOrder gets it (keep it with the caller's record of the
	// purchase); GetOrder leaves it as it was passed.
	Token string `json:"token,omitempty"`
}

// NewOrder is the input of CreateOrder.
type NewOrder struct {
	ProductID int64 `json:"product_id"`
	Quantity  int32 `json:"quantity"`
	// IdempotencyKey names the logical order. Empty: CreateOrder makes
	// one. Set it (NewIdempotencyKey) when the caller itself may repeat
	// the order, e.g. after its own restart, and store it with the
	// caller's record of the purchase.
	IdempotencyKey string `json:"-"`
}

// OrderResult is what CreateOrder got back.
type OrderResult struct {
	Order
	// Location is the order's URL path with its token, e.g.
	// /orders/42?token=… (GetOrder takes the id and token instead).
	Location string
	// Replayed is true when the service answered with the order an
	// earlier attempt with the same key had created.
	Replayed bool
	// IdempotencyKey is the key every attempt of this order sent.
	IdempotencyKey string
}

// CreateOrder places an order (checkout). One Idempotency-Key is chosen
// for the logical order before the first attempt and sent with every
// retry, so an attempt whose answer was lost and then retried returns the
// first order instead of placing a second one. ErrOutOfStock (409) is
// never retried.
func (c *Client) CreateOrder(ctx context.Context, in NewOrder) (OrderResult, error) {
	key := in.IdempotencyKey
	if key == "" {
		key = NewIdempotencyKey()
	}
	cl := call{
		method: http.MethodPost, path: "/orders", body: jsonBody(in),
		header:     http.Header{"Idempotency-Key": {key}},
		idempotent: true, // by its key
	}
	ans, err := c.do(ctx, cl)
	if err != nil {
		return OrderResult{}, err
	}
	res := OrderResult{
		Location:       ans.header.Get("Location"),
		Replayed:       ans.header.Get("Idempotent-Replayed") == "true",
		IdempotencyKey: key,
	}
	return res, decode(cl, ans, &res.Order)
}

// GetOrder reads the order POST /orders created, with the token
// CreateOrder returned (sent as X-Order-Token, so it stays out of URL
// logs). A wrong token is ErrNotFound, as an absent order is.
func (c *Client) GetOrder(ctx context.Context, id int64, token string) (Order, error) {
	var o Order
	cl := call{
		method: http.MethodGet, path: fmt.Sprintf("/orders/%d", id), idempotent: true,
		header: http.Header{"X-Order-Token": {token}},
	}
	err := c.json(ctx, cl, &o)
	if err == nil {
		o.Token = token
	}
	return o, err
}

// NewIdempotencyKey returns a fresh random key (a UUIDv4 string: 122
// random bits). A key proves ownership of its order as much as the order's
// token does: never derive one from guessable data (a cart id, a time).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
