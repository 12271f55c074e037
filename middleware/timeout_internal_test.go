package middleware

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

// TestDeadlineBehavesAsWithDeadline: whatever is asked of it, and in
// whatever order, the lazy deadline answers as context.WithDeadline would.
func TestDeadlineBehavesAsWithDeadline(t *testing.T) {
	tests := []struct {
		name       string
		in         time.Duration // deadline from now
		cancel     bool          // the parent (the client's connection) ends
		release    bool          // the request has ended
		wait       time.Duration // before asking
		cancelLate bool          // the parent ends after the wait
		wantErr    error
		wantCause  error
	}{
		{"alive", time.Hour, false, false, 0, false, nil, nil},
		{"deadline passed", 20 * time.Millisecond, false, false, 40 * time.Millisecond, false, context.DeadlineExceeded, context.DeadlineExceeded},
		{"client gone", time.Hour, true, false, 0, false, context.Canceled, context.Canceled},
		{"request ended", time.Hour, false, true, 0, false, context.Canceled, context.Canceled},
		{"request ended, asked after its deadline", 20 * time.Millisecond, false, true, 40 * time.Millisecond, false, context.Canceled, context.Canceled},
		{"deadline passed, then the client left", 20 * time.Millisecond, false, false, 40 * time.Millisecond, true, context.DeadlineExceeded, context.DeadlineExceeded},
	}
	asks := []struct {
		name string
		ask  func(ctx context.Context) (err, cause error)
	}{
		{"Err", func(ctx context.Context) (error, error) { return ctx.Err(), context.Cause(ctx) }},
		{"Cause first", func(ctx context.Context) (error, error) { c := context.Cause(ctx); return ctx.Err(), c }},
		{"Done", func(ctx context.Context) (error, error) {
			select {
			case <-ctx.Done():
			default:
			}
			return ctx.Err(), context.Cause(ctx)
		}},
		{"a derived context", func(ctx context.Context) (error, error) {
			child, cancel := context.WithTimeout(context.WithValue(ctx, ctxKey{}, 1), time.Hour)
			defer cancel()
			return child.Err(), context.Cause(child)
		}},
	}
	for _, tt := range tests {
		for _, a := range asks {
			t.Run(tt.name+"/"+a.name, func(t *testing.T) {
				parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "parent"))
				defer cancel()
				d := newDeadline(parent, time.Now().Add(tt.in))
				defer d.release()
				if tt.cancel {
					cancel()
				}
				if tt.release {
					d.release()
				}
				time.Sleep(tt.wait)
				if tt.cancelLate {
					cancel()
				}
				if err, cause := a.ask(d); !errors.Is(err, tt.wantErr) || !errors.Is(cause, tt.wantCause) {
					t.Errorf("Err %v, Cause %v; want %v, %v", err, cause, tt.wantErr, tt.wantCause)
				}
				if got := d.Value(ctxKey{}); got != "parent" {
					t.Errorf("Value %v, want the parent's", got)
				}
			})
		}
	}
}

// TestDeadlineArmsOnlyWhenWaitedOn: reading the deadline and values costs
// no timer; waiting does.
func TestDeadlineArmsOnlyWhenWaitedOn(t *testing.T) {
	at := time.Now().Add(time.Hour)
	d := newDeadline(context.Background(), at)
	defer d.release()
	if got, ok := d.Deadline(); !ok || !got.Equal(at) {
		t.Errorf("Deadline %v %v, want %v true", got, ok, at)
	}
	_ = d.Value(ctxKey{})
	if d.armed.Load() != nil {
		t.Fatal("armed by Deadline or Value, before anything waited")
	}
	_ = d.Done()
	if d.armed.Load() == nil {
		t.Fatal("not armed by Done")
	}
	ended := newDeadline(context.Background(), at)
	ended.release()
	_ = ended.Err()
	if got, ok := ended.Deadline(); !ok || !got.Equal(at) {
		t.Errorf("after the request: Deadline %v %v, want %v true", got, ok, at)
	}
}

// TestDeadlineFiresAndPropagates: an armed deadline fires on time and ends
// the contexts derived from it; an earlier parent deadline wins.
func TestDeadlineFiresAndPropagates(t *testing.T) {
	d := newDeadline(context.Background(), time.Now().Add(30*time.Millisecond))
	defer d.release()
	child, cancel := context.WithCancel(d)
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the derived context never ended")
	}
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("derived Err %v, want %v", child.Err(), context.DeadlineExceeded)
	}

	early := time.Now().Add(time.Minute)
	parent, stop := context.WithDeadline(context.Background(), early)
	defer stop()
	late := newDeadline(parent, time.Now().Add(time.Hour))
	defer late.release()
	if got, _ := late.Deadline(); !got.Equal(early) {
		t.Errorf("Deadline %v, want the parent's earlier %v", got, early)
	}
}

// TestDeadlineConcurrentUse: goroutines racing to wait on one request's
// context share one armed context (run under -race).
func TestDeadlineConcurrentUse(t *testing.T) {
	d := newDeadline(context.Background(), time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	chans := make([]<-chan struct{}, 32)
	for i := range chans {
		wg.Go(func() { chans[i] = d.Done(); _ = d.Err(); _ = d.Value(ctxKey{}) })
	}
	wg.Wait()
	for _, c := range chans[1:] {
		if c != chans[0] {
			t.Fatal("two Done channels for one deadline")
		}
	}
	d.release()
	select {
	case <-chans[0]:
	default:
		t.Error("Done still open after the request ended")
	}
}
