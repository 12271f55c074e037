package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// TopProduct is one row of the top-products report.
type TopProduct struct {
	ProductID    int64  `json:"product_id"`
	Name         string `json:"name"`
	Units        int64  `json:"units"`
	RevenueCents int64  `json:"revenue_cents"`
}

// TopProductsReport is the answer of GET /reports/top-products.
type TopProductsReport struct {
	Days  int          `json:"days"`
	Items []TopProduct `json:"items"`
}

// TopProducts reads the best sellers of the last days days (0: the
// server's default, 30), at most limit rows (0: 10). Reports are the
// first work the service sheds under load: expect ErrUnavailable then.
func (c *Client) TopProducts(ctx context.Context, days, limit int) (TopProductsReport, error) {
	q := url.Values{}
	if days > 0 {
		q.Set("days", strconv.Itoa(days))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var r TopProductsReport
	return r, c.json(ctx, call{method: http.MethodGet, path: "/reports/top-products", query: q, idempotent: true}, &r)
}

// probe is the policy of the health probes: one attempt, because a
// retried probe reports a state that has already changed.
var probe = NoRetries

// Health checks liveness (GET /healthz): nil when the process serves.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/healthz", idempotent: true, policy: &probe})
	return err
}

// Readiness is the body of GET /readyz.
type Readiness struct {
	// Ready is true on 200: send this instance traffic.
	Ready bool `json:"-"`
	// Status is "ready", "unavailable", "starting" or "draining".
	Status string `json:"status"`
	// Checks holds each dependency's state ("ok" or the error).
	Checks map[string]string `json:"checks,omitempty"`
}

// Ready reads the instance's readiness. A 503 is an answer here, not an
// error: Ready is false and Status says why.
func (c *Client) Ready(ctx context.Context) (Readiness, error) {
	cl := call{method: http.MethodGet, path: "/readyz", idempotent: true, policy: &probe}
	ans, err := c.do(ctx, cl)
	var r Readiness
	if err == nil {
		r.Ready = true
		return r, decode(cl, ans, &r)
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		if json.Unmarshal(ae.body, &r) == nil {
			return r, nil
		}
	}
	return r, err
}
