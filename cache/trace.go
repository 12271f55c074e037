package cache

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stampede-guard/api/cache/internal/redislock"
)

// Span names and attributes of the read path. A Fetch is one span; the
// lock wait, the load and the fenced write are its children, so a trace
// shows which request paid for a miss and which ones shared it.
const (
	spanFetch = "cache.Fetch"
	spanLock  = "cache.lock"
	spanLoad  = "cache.load"
	spanWrite = "cache.write"

	attrKey     = attribute.Key("cache.key")
	attrStatus  = attribute.Key("cache.status") // hit, miss or stale
	attrL1      = attribute.Key("cache.l1")     // served from the in-process cache
	attrShared  = attribute.Key("cache.shared") // answered by a load this call did not run
	attrOutcome = attribute.Key("cache.lock.outcome")
	attrWoken   = attribute.Key("cache.lock.woken") // a fill signal ended the wait
	attrPolls   = attribute.Key("cache.lock.polls")
	attrFenced  = attribute.Key("cache.write.outcome")
)

// tracerName is the instrumentation scope of the cache's spans.
const tracerName = "github.com/stampede-guard/api/cache"

// newTracer returns tp's tracer, or a no-op one when tp is nil (the
// default). A no-op span still costs its attributes and a context: Fetch,
// the one span on every read, is skipped outright when tp is nil; the
// others sit on the miss path.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// endFetch records a Fetch's outcome on its span and ends it.
func endFetch(span trace.Span, r Result, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attrStatus.String(statusName(r.Status)), attrL1.Bool(r.L1))
	}
	span.End()
}

func statusName(s Status) string {
	switch s {
	case Hit:
		return "hit"
	case Stale:
		return "stale"
	}
	return "miss"
}

// markShared says on the Fetch span in ctx that its answer came from a load
// it did not run (another caller's in this process, or another instance's).
func markShared(ctx context.Context) {
	trace.SpanFromContext(ctx).SetAttributes(attrShared.Bool(true))
}

// waitSpan is the span of a lock wait: from the first attempt to take the
// lock until it is taken or the wait ends (value filled, timeout, error).
type waitSpan struct {
	span  trace.Span
	polls int
	woken bool
	ended bool
}

func (c *Cache) startWait(ctx context.Context) (context.Context, *waitSpan) {
	ctx, span := c.tracer.Start(ctx, spanLock)
	return ctx, &waitSpan{span: span}
}

// end closes the span once with outcome: acquired, filled, timeout,
// unavailable or cancelled.
func (w *waitSpan) end(outcome string) {
	if w.ended {
		return
	}
	w.ended = true
	w.span.SetAttributes(attrOutcome.String(outcome), attrWoken.Bool(w.woken), attrPolls.Int(w.polls))
	w.span.End()
}

// writeOutcome names a fenced write's result: stored, or lock_lost when the
// lock expired mid-load (the value is not stored), or error.
func writeOutcome(err error) string {
	switch {
	case err == nil:
		return "stored"
	case errors.Is(err, redislock.ErrLockNotHeld):
		return "lock_lost"
	}
	return "error"
}
