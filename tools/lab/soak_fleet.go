package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// fleet is the soak's instances as the clients see them: a load balancer's
// view, which routes around an instance while it is down. Each instance has
// a generation, bumped when the soak kills it, so a request that was in
// flight on a killed process is told apart from one a live process failed.
type fleet struct {
	c     *Cluster
	mu    sync.Mutex
	gen   []int
	alive []bool
	lives []int // processes each slot has had (1 + restarts)
}

func newFleet(c *Cluster) *fleet {
	n := len(c.Instances)
	f := &fleet{c: c, gen: make([]int, n), alive: make([]bool, n), lives: make([]int, n)}
	for i := range n {
		f.alive[i], f.lives[i] = true, 1
	}
	return f
}

// pick returns a live instance's slot, base URL and generation, avoiding
// slot not (-1: any).
func (f *fleet) pick(not int) (slot int, base string, gen int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.alive)
	first := rand.IntN(n)
	for k := range n {
		i := (first + k) % n
		if f.alive[i] && (i != not || k == n-1) {
			return i, f.c.Instances[i].Base, f.gen[i]
		}
	}
	return first, f.c.Instances[first].Base, f.gen[first]
}

// killedSince reports whether slot's process of generation gen was killed.
func (f *fleet) killedSince(slot, gen int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen[slot] != gen
}

// pid is slot's process id and its life number, or 0 while it is down.
func (f *fleet) pid(slot int) (pid, life int, base string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.alive[slot] {
		return 0, f.lives[slot], ""
	}
	inst := f.c.Instances[slot]
	return inst.cmd.Process.Pid, f.lives[slot], inst.Base
}

// killAndRestart takes slot out of rotation, SIGKILLs it, waits down, then
// starts a new process in its place (its old log kept beside) and puts it
// back once it answers /readyz.
func (f *fleet) killAndRestart(ctx context.Context, slot int, down time.Duration) error {
	// The generation moves before the kill, with the instance's place in
	// rotation: bumped after it, a request in flight whose dial was
	// refused by the dead process in between read as a live instance's
	// failure (a CI soak failed on one such "connection refused").
	f.mu.Lock()
	f.alive[slot] = false
	f.gen[slot]++
	inst := f.c.Instances[slot]
	life := f.lives[slot]
	f.mu.Unlock()
	inst.Kill()
	_ = inst.log.Close()
	logPath := filepath.Join(f.c.lab.logDir, fmt.Sprintf("%s-%d.log", f.c.Name, slot))
	_ = os.Rename(logPath, fmt.Sprintf("%s.%d", logPath, life))
	if err := sleepCtx(ctx, down); err != nil {
		return err
	}
	next, err := f.c.lab.startInstance(ctx, f.c, slot)
	if next == nil {
		return fmt.Errorf("restart instance %d: %w", slot, err)
	}
	f.mu.Lock()
	f.c.Instances[slot] = next
	f.mu.Unlock()
	if err == nil {
		err = waitInstanceReady(ctx, next)
	}
	if err != nil {
		return fmt.Errorf("restart instance %d: %w", slot, err)
	}
	f.mu.Lock()
	f.alive[slot] = true
	f.lives[slot]++
	f.mu.Unlock()
	return nil
}

// waitInstanceReady polls one instance's /readyz until it answers 200.
func waitInstanceReady(ctx context.Context, inst *Instance) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if r := get(ctx, inst.Base, "/readyz"); r.Status == 200 {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("instance %d not ready within %s", inst.Index, readyTimeout)
}
