package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// recorder is an in-memory exporter and the provider that feeds it.
func recorder(t *testing.T) (*tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return sr, tp
}

// attr returns a span attribute as a string ("" when absent).
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func childOf(s, parent sdktrace.ReadOnlySpan) bool {
	return s.Parent().SpanID() == parent.SpanContext().SpanID() && s.SpanContext().TraceID() == parent.SpanContext().TraceID()
}

// A cold read is one Fetch span (status miss, not shared) whose children
// are the lock wait (acquired), the load and the fenced write (stored); the
// next read is a hit with no children.
func TestTraceColdRead(t *testing.T) {
	sr, tp := recorder(t)
	c := newCache(t, dbtest.NewRedis(t, redisDB), cache.Config{Mode: cache.ModeSWR, TracerProvider: tp})
	key := newPrefix() + "{p:1}"
	var calls atomic.Int64
	for range 2 {
		if _, err := c.Fetch(context.Background(), key, slowLoad(&calls, time.Millisecond, "v")); err != nil {
			t.Fatal(err)
		}
	}
	spans := sr.Ended()
	fetches := named(spans, "cache.Fetch")
	if len(fetches) != 2 {
		t.Fatalf("%d cache.Fetch spans, want 2", len(fetches))
	}
	cold, warm := fetches[0], fetches[1]
	if got := attr(cold, "cache.status"); got != "miss" {
		t.Errorf("cold read cache.status = %q, want miss", got)
	}
	if got := attr(cold, "cache.shared"); got != "false" {
		t.Errorf("cold read cache.shared = %q, want false", got)
	}
	if got := attr(warm, "cache.status"); got != "hit" {
		t.Errorf("second read cache.status = %q, want hit", got)
	}
	if attr(cold, "cache.key") != key || attr(cold, "cache.l1") != "false" {
		t.Errorf("cold read attributes: %v", cold.Attributes())
	}
	for _, want := range []struct{ name, key, value string }{
		{"cache.lock", "cache.lock.outcome", "acquired"},
		{"cache.load", "", ""},
		{"cache.write", "cache.write.outcome", "stored"},
	} {
		got := named(spans, want.name)
		if len(got) != 1 {
			t.Fatalf("%d %s spans, want 1", len(got), want.name)
		}
		if !childOf(got[0], cold) {
			t.Errorf("%s is not a child of the cold read's cache.Fetch", want.name)
		}
		if want.key != "" && attr(got[0], want.key) != want.value {
			t.Errorf("%s %s = %q, want %q", want.name, want.key, attr(got[0], want.key), want.value)
		}
	}
}

// A stampede on one cold key across two instances (two clients, two
// single-flights): exactly one load span in the whole trace set, one Fetch
// span per request, and every Fetch but the loader's marked shared; the
// other instance's leader waited on the lock and was woken by the fill.
func TestTraceStampede(t *testing.T) {
	const perInstance = 20
	sr, tp := recorder(t)
	key := newPrefix() + "{p:1}"
	var calls atomic.Int64
	// The load lasts until the other instance's leader has found the lock
	// taken (its attempt counted as contended). Waiting for its cache.lock
	// span to start was not enough beside CPU burners: its attempt could
	// land after the fill and the release, take the free lock and find the
	// value, and nobody waited. Its first poll is far off, so only the
	// fill's signal ends its wait within the test.
	var caches []*cache.Cache
	load := func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		for ctx.Err() == nil && caches[0].Stats().LockContended+caches[1].Stats().LockContended == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return []byte("v"), nil
	}
	cfg := cache.WithFirstPoll(cache.Config{Mode: cache.ModeLock, LockWait: 20 * time.Second, LockTTL: 30 * time.Second, TracerProvider: tp}, 10*time.Second)
	caches = []*cache.Cache{
		newCache(t, dbtest.NewRedis(t, redisDB), cfg),
		newCache(t, dbtest.NewRedis(t, redisDB), cfg),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range caches {
		for range perInstance {
			wg.Go(func() {
				<-start
				if _, err := c.Fetch(ctx, key, load); err != nil {
					t.Error(err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("loader ran %d times, want 1", calls.Load())
	}
	spans := sr.Ended()
	if n := len(named(spans, "cache.load")); n != 1 {
		t.Errorf("%d cache.load spans, want 1", n)
	}
	fetches := named(spans, "cache.Fetch")
	if len(fetches) != 2*perInstance {
		t.Fatalf("%d cache.Fetch spans, want %d", len(fetches), 2*perInstance)
	}
	load1 := named(spans, "cache.load")[0]
	owners, shared := 0, 0
	for _, f := range fetches {
		if childOf(load1, f) {
			owners++
			if attr(f, "cache.shared") != "false" {
				t.Errorf("the loader's Fetch is marked shared")
			}
			continue
		}
		if attr(f, "cache.shared") == "true" || attr(f, "cache.status") == "hit" {
			shared++
		}
	}
	if owners != 1 || shared != 2*perInstance-1 {
		t.Errorf("%d Fetch spans own the load and %d others are shared or hits, want 1 and %d", owners, shared, 2*perInstance-1)
	}
	filled := 0
	for _, w := range named(spans, "cache.lock") {
		if attr(w, "cache.lock.outcome") == "filled" {
			filled++
			if attr(w, "cache.lock.woken") != "true" {
				t.Errorf("a filled wait was not woken by the fill: %v", w.Attributes())
			}
		}
	}
	if filled == 0 {
		t.Errorf("no cache.lock span ended filled: the other instance never waited on the holder")
	}
}
