// Package client is the Go client of the stampede-guard API, for a service
// that calls it. It is the caller's half of the overload contract: it
// retries only what a retry can fix, waits at least as long as the
// service's Retry-After asks, stops retrying when its retry budget says the
// service is down rather than unlucky, and sends one Idempotency-Key per
// logical order so a retried checkout never charges twice.
//
// Retries happen in this package and nowhere else: callers must not wrap
// its calls in a retry loop of their own (see RetryPolicy).
package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one deployment of the API. Safe for concurrent use; build
// one per process and service, not one per request.
type Client struct {
	base   *url.URL
	hc     *http.Client
	apiKey string
	policy RetryPolicy
	budget *Budget
	rnd    func(int64) int64
	now    func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (its transport, its pool); the
// client's own deadlines apply on top of hc.Timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithAPIKey sends "Authorization: Bearer <key>" with every write (POST,
// PUT); reads never carry it.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithRetry sets the retry policy; zero fields keep their defaults.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.policy = p.withDefaults() } }

// WithBudget makes the client draw its retries from b, to share one
// budget between the clients of a process. nil disables the budget, which
// only a test should do.
func WithBudget(b *Budget) Option { return func(c *Client) { c.budget = b } }

// New returns a client of the API at baseURL (e.g. "http://127.0.0.1:8080"),
// with the default retry policy and a retry budget of its own.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{
		base:   u,
		hc:     &http.Client{},
		policy: RetryPolicy{}.withDefaults(),
		budget: NewBudget(0, 0),
		rnd:    randN,
		now:    time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Budget returns the retry budget the client draws from (nil if none).
func (c *Client) Budget() *Budget { return c.budget }

// call is one logical call: what to send and whether sending it twice is
// harmless.
type call struct {
	method, path string
	query        url.Values
	body         []byte // JSON; nil for none
	header       http.Header
	idempotent   bool
	policy       *RetryPolicy // overrides the client's (probes)
}

// answer is a response whose body has been read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends cl, retrying by the policy and the budget, and returns the
// first 2xx answer, or the last error: an *APIError for an answer outside
// 2xx, a wrapped transport or context error otherwise.
func (c *Client) do(ctx context.Context, cl call) (*answer, error) {
	p := c.policy
	if cl.policy != nil {
		p = cl.policy.withDefaults()
	}
	// A call that cannot retry neither spends nor earns budget: probes
	// and the lab's one-shot reads say nothing about retries.
	budget := c.budget
	if p.MaxAttempts == 1 {
		budget = nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.MaxElapsed)
	defer cancel()
	unknown := false // an attempt of this write may have been applied
	for attempt := 1; ; attempt++ {
		ans, err := c.attempt(ctx, cl, p.AttemptTimeout)
		unknown = unknown || mayHaveActed(cl.method, ans, err)
		var retryable bool
		var retryAfter time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			// The caller gave up, or the call's time is spent: never retry.
			return nil, fmt.Errorf("client: %s %s: %w", cl.method, cl.path, errors.Join(err, context.Cause(ctx), outcome(unknown)))
		case err != nil:
			retryable = retryableTransport(err, cl.idempotent)
			err = fmt.Errorf("client: %s %s (attempt %d): %w", cl.method, cl.path, attempt, errors.Join(err, outcome(unknown)))
		case ans.status >= 200 && ans.status < 300:
			budget.success()
			return ans, nil
		default:
			ae := c.apiError(cl, ans, attempt)
			ae.OutcomeUnknown = unknown
			retryable, retryAfter, err = retryableStatus(ans.status, cl.idempotent), ae.RetryAfter, ae
		}
		if !retryable {
			return nil, err
		}
		budget.failure()
		if attempt >= p.MaxAttempts || !budget.allowRetry() {
			return nil, err
		}
		wait := p.delay(attempt, retryAfter, c.rnd)
		if d, ok := ctx.Deadline(); ok && c.now().Add(wait).After(d) {
			// The retry could only land after the deadline: give the
			// caller the answer now instead of sleeping to fail.
			return nil, err
		}
		if sleep(ctx, wait) != nil {
			return nil, err
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
