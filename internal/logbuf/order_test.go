package logbuf_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/logbuf"
)

// slowSink is a sink whose every write takes a while, so that batches
// written outside the Writer's lock overlap with the lines still coming.
type slowSink struct{ sink }

func (s *slowSink) Write(p []byte) (int, error) {
	time.Sleep(50 * time.Microsecond)
	return s.sink.Write(p)
}

// TestConcurrentLinesKeepTheirOrder: many goroutines logging at once, some
// lines batched and some Direct, with full batches written while others
// log: every line arrives once and whole, and each goroutine's lines
// arrive in the order it wrote them.
func TestConcurrentLinesKeepTheirOrder(t *testing.T) {
	const writers, lines = 8, 3000
	out := &slowSink{}
	w := logbuf.New(out, time.Millisecond)
	stop := w.Start()
	pad := strings.Repeat("x", 100) // fills a batch every few hundred lines
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				line := []byte(fmt.Sprintf("%d %d %s\n", g, i, pad))
				if i%97 == 0 {
					_, _ = w.Direct().Write(line)
				} else {
					_, _ = w.Write(line)
				}
			}
		})
	}
	wg.Wait()
	stop()
	next := make([]int, writers)
	for _, chunk := range out.all() {
		for _, line := range strings.Split(strings.TrimSuffix(chunk, "\n"), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || f[2] != pad {
				t.Fatalf("a torn line: %q", line)
			}
			g, _ := strconv.Atoi(f[0])
			i, _ := strconv.Atoi(f[1])
			if i != next[g] {
				t.Fatalf("writer %d: line %d arrived where %d was due", g, i, next[g])
			}
			next[g]++
		}
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d of %d lines arrived", g, n, lines)
		}
	}
}
