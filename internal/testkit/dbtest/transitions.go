package dbtest

import (
	"fmt"
	"sync"
	"time"

	"github.com/stampede-guard/api/internal/breaker"
)

// Transitions records a breaker's state changes with their times, for a
// test that cuts a dependency and restores it: pass Record as the breaker's
// OnStateChange.
type Transitions struct {
	mu   sync.Mutex // guards list
	list []Transition
}

// Transition is one recorded state change.
type Transition struct {
	At       time.Time
	From, To breaker.State
}

// Record is a breaker.Config.OnStateChange.
func (r *Transitions) Record(_ string, from, to breaker.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, Transition{At: time.Now(), From: from, To: to})
}

// State is the last state recorded (closed before any change).
func (r *Transitions) State() breaker.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == 0 {
		return breaker.Closed
	}
	return r.list[len(r.list)-1].To
}

// FirstProbeAfter describes the first probe that started after t: when it
// started and the state it led to. ok is false while none has ended.
func (r *Transitions) FirstProbeAfter(t time.Time) (started time.Time, result breaker.State, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, tr := range r.list {
		if tr.To == breaker.HalfOpen && tr.At.After(t) && i+1 < len(r.list) {
			return tr.At, r.list[i+1].To, true
		}
	}
	return time.Time{}, 0, false
}

// Probes counts the probes started so far.
func (r *Transitions) Probes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, tr := range r.list {
		if tr.To == breaker.HalfOpen {
			n++
		}
	}
	return n
}

func (r *Transitions) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ""
	for _, tr := range r.list {
		s += fmt.Sprintf(" %s→%s@%s", tr.From, tr.To, tr.At.Format("05.000"))
	}
	return s
}
