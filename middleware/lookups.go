package middleware

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// lookupBudget bounds key-store lookups of keys not yet believed: per
// client first, then for the instance. The instance's budget protects
// PostgreSQL; the client's keeps one client from spending it, so made-up
// keys from one address cannot make a genuine key from another answer 503
// (issue 27 row 4: 60 random keys did).
type lookupBudget struct {
	instance  *rate.Limiter
	perClient *lru.Cache[string, *rate.Limiter]
	limit     rate.Limit
	burst     int
}

// lookupClients bounds the clients whose lookup budgets are remembered; one
// forgotten starts again with a full (small) burst.
const lookupClients = 10_000

// clientLookupsError: this client spent its own lookup budget (429, with
// its share's burst and when a lookup is free again), as opposed to
// errUnverifiable, the instance's (503).
type clientLookupsError struct {
	burst int
	wait  time.Duration
}

func (e *clientLookupsError) Error() string            { return "too many unverified API keys from this client" }
func (e *clientLookupsError) RetryHint() time.Duration { return e.wait }

func newLookupBudget(perSecond, perClientPerSecond float64, perClientBurst int) *lookupBudget {
	clients, _ := lru.New[string, *rate.Limiter](lookupClients) // errors only for a size < 1
	return &lookupBudget{
		instance:  rate.NewLimiter(rate.Limit(max(perSecond, 1)), max(int(perSecond), 1)),
		perClient: clients,
		limit:     rate.Limit(perClientPerSecond),
		burst:     max(perClientBurst, 1),
	}
}

// allow takes one lookup for client, or says whose budget is spent.
func (b *lookupBudget) allow(client string) error {
	if b.limit > 0 {
		l, ok := b.perClient.Get(client)
		if !ok {
			fresh := rate.NewLimiter(b.limit, b.burst)
			if prev, found, _ := b.perClient.PeekOrAdd(client, fresh); found {
				l = prev
			} else {
				l = fresh
			}
		}
		if !l.Allow() {
			// A token bucket: the next lookup comes when one token has
			// refilled.
			wait := time.Duration((1 - l.Tokens()) / float64(b.limit) * float64(time.Second))
			return &clientLookupsError{burst: b.burst, wait: wait}
		}
	}
	if !b.instance.Allow() {
		return errUnverifiable
	}
	return nil
}
