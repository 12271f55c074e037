// Package logbuf batches the access log into a few writes a second. One
// write(2) per request is about a tenth of what a hot key costs to answer
// (docs/benchmarks.md, "hot key"); nginx's `access_log … buffer= flush=` makes
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
//
// A full batch is written outside mu, so requests go on logging while
// write(2) runs; outMu, taken before mu is let go, keeps the batches (and
// Direct lines) reaching out in the order they were taken. The lock order
// is mu, then outMu.
type Writer struct {
	mu    sync.Mutex // guards buf and every
	buf   []byte
	every time.Duration // 0: no batching, every line written at once

	outMu sync.Mutex // guards out and spare
	out   io.Writer
	spare []byte // the last batch written, reused for the next
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
	if w.every == 0 {
		return w.flushUnlock(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) < flushAt {
		w.mu.Unlock()
		return len(p), nil
	}
	_, _ = w.flushUnlock(nil)
	return len(p), nil
}

// Direct is a writer that writes each line at once, after the lines
// batched before it.
func (w *Writer) Direct() io.Writer { return direct{w} }

type direct struct{ w *Writer }

func (d direct) Write(p []byte) (int, error) {
	d.w.mu.Lock()
	return d.w.flushUnlock(p)
}

// Flush writes the batched lines now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	_, err := w.flushUnlock(nil)
	return err
}

// flushUnlock takes the batch, lets go of mu, and writes the batch and
// then line (if any) to out. Called with mu held. It returns what writing
// line returned (or the batch's error, with no line).
func (w *Writer) flushUnlock(line []byte) (int, error) {
	w.outMu.Lock() // before mu is let go: writes keep the order of taking
	batch := w.buf
	w.buf, w.spare = w.spare[:0], nil
	w.mu.Unlock()
	defer w.outMu.Unlock()
	var err error
	if len(batch) > 0 {
		_, err = w.out.Write(batch)
	}
	w.spare = batch[:0]
	if line == nil {
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	return w.out.Write(line)
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
			w.every = 0
			_, _ = w.flushUnlock(nil)
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}
