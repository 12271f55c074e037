package breaker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/sony/gobreaker/v2"
)

// scheduleLocked arms the next probe after a jittered b.wait. The timer's
// callback owns one count of b.running until it returns, or until Close
// stops the timer first.
func (b *Breaker) scheduleLocked() {
	if b.shut {
		return
	}
	d := jittered(b.wait, b.cfg.Jitter, b.cfg.Rand())
	b.nextProbe = b.cfg.Clock.Now().Add(d)
	b.running.Add(1)
	b.stopTimer = b.cfg.Clock.AfterFunc(d, func() {
		defer b.running.Done()
		b.probe()
	})
}

// probe takes gobreaker's half-open slot, runs the health query in it and
// hands gobreaker the outcome, which closes or re-opens it (and, through
// onStateChange, arms the next probe). Only the timer calls it, and the
// next timer is armed only when the outcome is in, so probes never overlap.
func (b *Breaker) probe() {
	b.mu.Lock()
	if b.shut || b.state != Open {
		b.mu.Unlock()
		return
	}
	done, err := b.allowProbeLocked()
	if err != nil {
		// Cannot happen (users never reach gobreaker while it is not
		// closed); try again on the same schedule rather than stay open.
		b.scheduleLocked()
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.ProbeTimeout)
	err = b.cfg.Probe(ctx)
	cancel()

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shut {
		return
	}
	if err != nil {
		err = fmt.Errorf("%w: %w", errProbe, err)
	}
	done(err)
}

// allowProbeLocked asks gobreaker for the half-open slot. gobreaker leaves
// open Timeout (1 ns) after opening: a clock too coarse to have moved since
// then is waited out.
func (b *Breaker) allowProbeLocked() (func(error), error) {
	for {
		done, err := b.cb.Allow()
		if !errors.Is(err, gobreaker.ErrOpenState) {
			return done, err
		}
		runtime.Gosched()
	}
}

// jittered shortens d by up to the fraction j (u in [0, 1)): the wait never
// exceeds the nominal schedule, and instances that opened together drift
// apart instead of probing in step.
func jittered(d time.Duration, j, u float64) time.Duration {
	return d - time.Duration(float64(d)*j*u)
}
