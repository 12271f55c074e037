package client

import "sync"

// Budget is a retry budget: the token bucket of gRPC's retry throttling
// (gRFC A6). Every failed attempt that could be retried takes one token,
// every success gives back Ratio of one, and a retry is allowed only while
// more than half of MaxTokens remain. In steady state a caller retries at
// most about Ratio retries per success; in an outage, where nothing
// succeeds, it stops retrying after MaxTokens/2 failures and sends only its
// first attempts, so a fleet of callers cannot multiply the outage's
// traffic by its attempt count.
//
// One Budget belongs to one caller of one service: share it between the
// Clients of a process that call the same API, never across services.
// Safe for concurrent use.
type Budget struct {
	mu        sync.Mutex
	tokens    float64
	maxTokens float64
	ratio     float64
}

// Defaults of NewBudget, gRPC's example values.
const (
	DefaultBudgetTokens = 10
	DefaultBudgetRatio  = 0.1
)

// NewBudget returns a full bucket of maxTokens (at least 1; default 10
// when ≤ 0) that refills ratio per success (default 0.1 when ≤ 0).
func NewBudget(maxTokens, ratio float64) *Budget {
	if maxTokens <= 0 {
		maxTokens = DefaultBudgetTokens
	}
	maxTokens = max(maxTokens, 1)
	if ratio <= 0 {
		ratio = DefaultBudgetRatio
	}
	return &Budget{tokens: maxTokens, maxTokens: maxTokens, ratio: ratio}
}

// allowRetry reports whether the bucket still allows a retry.
func (b *Budget) allowRetry() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens > b.maxTokens/2
}

// failure records a failed attempt of the kind a retry could fix.
func (b *Budget) failure() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = max(b.tokens-1, 0)
}

// success records an attempt the service answered normally.
func (b *Budget) success() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.tokens+b.ratio, b.maxTokens)
}

// Tokens returns the tokens left, for metrics and tests.
func (b *Budget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
