package breaker_test

import (
	"slices"
	"sync"
	"time"
)

// fakeClock is a Clock whose time moves only when a test says so. Advance
// runs each due callback synchronously, at its own deadline and in deadline
// order, so a test sees a whole probe schedule without sleeping.
type fakeClock struct {
	mu     sync.Mutex // guards now, timers, seq
	now    time.Time
	timers []*fakeTimer
	seq    int
}

type fakeTimer struct {
	at  time.Time
	seq int
	f   func()
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.timers, t)
		if i < 0 {
			return false
		}
		c.timers = slices.Delete(c.timers, i, i+1)
		return true
	}
}

// Advance moves time forward by d, firing every timer that falls due on
// the way, including timers those callbacks arm.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		i := -1
		for j, t := range c.timers {
			if !t.at.After(target) && (i < 0 || t.at.Before(c.timers[i].at) ||
				t.at.Equal(c.timers[i].at) && t.seq < c.timers[i].seq) {
				i = j
			}
		}
		if i < 0 {
			c.now = later(c.now, target)
			c.mu.Unlock()
			return
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		c.now = later(c.now, t.at)
		c.mu.Unlock()
		t.f() // outside the lock: it arms the next timer
		c.mu.Lock()
	}
}

// pending is the number of armed timers.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// later keeps time from going backwards when tests advance concurrently.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
