package loglimit_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/loglimit"
)

// TestOneLineASecondSaysHowManyWereLeftOut: 100 goroutines logging at once
// write one line; the first line of the next second says 99 were left out.
func TestOneLineASecondSaysHowManyWereLeftOut(t *testing.T) {
	for range 5 {
		lines, inOneSecond := burst()
		if !inOneSecond {
			continue // the burst straddled a second: its count means nothing
		}
		if len(lines) != 2 {
			t.Fatalf("got %d lines, want 2 (one per second):\n%s", len(lines), strings.Join(lines, "\n"))
		}
		if strings.Contains(lines[0], "similar_lines_left_out") || !strings.Contains(lines[1], "similar_lines_left_out=99") {
			t.Errorf("want the second line alone to say 99 were left out:\n%s", strings.Join(lines, "\n"))
		}
		return
	}
	t.Fatal("no burst of 100 lines fitted in one second in five tries")
}

// burst logs 100 lines at once just after a second begins, then one in the
// next second, and returns the lines written and whether the 100 fitted in
// their second.
func burst() (lines []string, inOneSecond bool) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	second := time.Now().Unix()
	var limit loglimit.PerSecond
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { limit.Log(log, slog.LevelWarn, "redis away") })
	}
	wg.Wait()
	inOneSecond = time.Now().Unix() == second
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	limit.Log(log, slog.LevelWarn, "redis away")
	mu.Lock()
	defer mu.Unlock()
	return strings.Split(strings.TrimSpace(buf.String()), "\n"), inOneSecond
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
