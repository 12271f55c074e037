// Package logbuf batches the access log into a few writes a second. One
// write(2) per request is about a tenth of what a hot key costs to answer
// (BENCHMARKS.md, "hot key"); nginx's `access_log … buffer= flush=` makes
// the same trade. It protects the hot path from paying a system call per
// line, at the price of losing at most one flush interval of access lines
// if the process is killed (SIGKILL; a clean shutdown flushes).
//
// Ordering is kept: every line goes through one Writer, and a line written
// Direct (warnings, errors, startup) first flushes the lines batched before
// it, so the output reads in the order things happened.
package logbuf

import (
	"context"
	"io"
	"sync"
	"time"
)

// flushAt is the batch size that is written at once, without waiting for
// the interval: a burst never holds more than this in memory.
const flushAt = 32 << 10

// Writer batches the lines written to it into out.
type Writer struct {
	mu    sync.Mutex
	out   io.Writer
	buf   []byte
	every time.Duration // 0: no batching, every line written at once
}

// New returns a Writer that batches lines for every before writing them to
// out; every == 0 writes each line at once. Run (or Start) must be running
// for batched lines to be written before the batch fills.
func New(out io.Writer, every time.Duration) *Writer {
	return &Writer{out: out, every: every}
}

// Write batches p, a whole line (slog writes one line per call). It never
// fails, since logging must not fail a request: a batch that out refuses is
// dropped, as a refused line was when each was written alone.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.every == 0 {
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= flushAt {
		_ = w.flushLocked()
	}
	return len(p), nil
}

// Direct is a writer that writes each line at once, after the lines
// batched before it.
func (w *Writer) Direct() io.Writer { return direct{w} }

type direct struct{ w *Writer }

func (d direct) Write(p []byte) (int, error) {
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	if err := d.w.flushLocked(); err != nil {
		return 0, err
	}
	return d.w.out.Write(p)
}

// Flush writes the batched lines now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Start runs Run in a goroutine of its own until the returned stop is
// called; stop returns after the last flush.
func (w *Writer) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	return func() { cancel(); <-done }
}

// Run flushes every interval until ctx ends, then once more, and from then
// on writes every line at once: a handler still running after a shutdown
// timed out loses no line either. It returns at once when batching is off.
func (w *Writer) Run(ctx context.Context) {
	if w.every == 0 {
		return
	}
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			defer w.mu.Unlock()
			_ = w.flushLocked()
			w.every = 0
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}
