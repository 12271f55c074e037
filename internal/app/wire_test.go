package app

import (
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stampede-guard/api/handlers"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/middleware"
)

// TestClassTableCaps: the queue each route class may join follows
// SHED_MAX_WAITING, and reports are never allowed a longer queue than
// reads (they are shed first): a cap of 0 lets no class queue, where the
// reports' floor of 1 once let them queue while reads could not.
func TestClassTableCaps(t *testing.T) {
	tests := []struct {
		shed                  int
		critical, normal, low int64
	}{
		{0, 0, 0, 0},
		{1, 2, 1, 1},
		{3, 6, 3, 1},
		{20, 40, 20, 5},
	}
	for _, tc := range tests {
		got := map[string]int64{}
		for _, rc := range classTable(config.Config{ShedMaxWaiting: tc.shed}, &handlers.Classes{}, nil, nil) {
			got[rc.name] = rc.maxWaiting
		}
		want := map[string]int64{"critical": tc.critical, "normal": tc.normal, "low": tc.low}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("SHED_MAX_WAITING=%d: %s may queue %d, want %d", tc.shed, name, got[name], w)
			}
		}
	}
}

// TestEngineGrowsTheStackFirst: middleware.GrowStack is the engine's
// first handler, so the stack grows once, before any other frame of the
// chain is on it (docs/benchmarks.md, "stack growth at the door").
func TestEngineGrowsTheStackFirst(t *testing.T) {
	engine, err := newEngine(config.Config{}, telemetry.NewMetrics(nil, nil, nil), nil,
		slog.New(slog.DiscardHandler), middleware.NewAccessLog(io.Discard, slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	if len(engine.Handlers) == 0 {
		t.Fatal("the engine has no middleware")
	}
	// Inlined, the closure is named after its caller: app.newEngine.GrowStack.func1.
	if first := runtime.FuncForPC(reflect.ValueOf(engine.Handlers[0]).Pointer()).Name(); !strings.Contains(first, ".GrowStack.") {
		t.Errorf("the engine's first handler is %s, want middleware.GrowStack's", first)
	}
}
