package repo

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stampede-guard/api/cache"
)

// writeThrough refreshes the cached entry after the database committed.
// Writing the value we just wrote would race: of two concurrent updates the
// older one's SET could land last and stay cached. Instead it invalidates
// (which also revokes any in-flight load's lock, so that load's fenced write
// fails) and then reloads the committed row under the key's lock with a
// fenced write: a later update's invalidation fences out this reload, so
// the cache can never go back in time. It runs on a short deadline of its
// own, so a client that hangs up right after the commit cannot skip it; its
// failure does not fail the write: a failed invalidation is tried again
// until Redis takes it (cache/pending.go).
func (p *Products) writeThrough(ctx context.Context, id int64) { p.refresh(ctx, id, selectProduct) }

// refresh is writeThrough, reloading with query.
func (p *Products) refresh(ctx context.Context, id int64, query string) {
	ctx, cancel := writeThroughContext(ctx)
	defer cancel()
	key := Key(id)
	if err := p.cache.Invalidate(ctx, key); err != nil {
		p.lostInvalidations.Log(p.log, slog.LevelError, "invalidation failed: tried again until Redis takes it; other instances may serve the old entry until then", "product", id, "err", err)
		return
	}
	err := p.cache.Reload(ctx, key, func(ctx context.Context) ([]byte, error) { return p.loadBy(ctx, id, query) })
	if err != nil && !errors.Is(err, cache.ErrNotObtained) {
		// Invalidated but not refilled: the next read loads it.
		p.log.Warn("write-through reload failed", "product", id, "err", err)
	}
}

// writeThroughContext is the write-through's context: not cancelled with
// the request, and ending at writeThroughTimeout or at the request's
// deadline, whichever comes first (but never within writeThroughFloor), so
// the write's answer leaves before the server's write timeout, which lies
// past REQUEST_TIMEOUT.
func writeThroughContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := writeThroughTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, max(time.Until(deadline), writeThroughFloor))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// The cache refresh after a write takes at most writeThroughTimeout, and
// no longer than the request's deadline allows (writeThroughContext): a
// hung Redis must not hold the answer of a write that committed until the
// server's write timeout cuts it. writeThroughFloor is what it gets when
// the write itself used the budget up.
const (
	writeThroughTimeout = 2 * time.Second
	writeThroughFloor   = 50 * time.Millisecond
)
