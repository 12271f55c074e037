package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// fault is one failure the soak stages, for about `on`, then undoes.
type fault struct {
	name string
	run  func(ctx context.Context, s *soak, on time.Duration) error
}

// soakFaults rotate in this order, one per period. A real PostgreSQL
// restart is not staged: the server is shared with other work on the
// machine (the test suites of other checkouts), so the soak stands in for
// it with what the app sees of one: every backend of its database ended by
// pg_terminate_backend (the "terminating connection due to administrator
// command" a fast shutdown sends) and the link refusing connections for the
// seconds a restart takes. No Redis Cluster master is killed: the soak runs
// on a single Redis behind the lab's proxy, which is what "Redis down" cuts
// (the cluster experiment of `make lab` kills a master).
var soakFaults = []fault{
	{"db latency 250ms", func(ctx context.Context, s *soak, on time.Duration) error {
		s.lab.dbProxy.SetDelay(250 * time.Millisecond)
		defer s.lab.dbProxy.SetDelay(0)
		return sleepCtx(ctx, on)
	}},
	{"redis down", func(ctx context.Context, s *soak, on time.Duration) error {
		s.lab.redisProxy.SetDown(true)
		defer s.lab.redisProxy.SetDown(false)
		return sleepCtx(ctx, on)
	}},
	{"db connection resets", func(ctx context.Context, s *soak, on time.Duration) error {
		// Cut every database connection, 300 ms without, every 3 s.
		for end := time.Now().Add(on); time.Now().Before(end); {
			s.lab.dbProxy.SetDown(true)
			err := sleepCtx(ctx, 300*time.Millisecond)
			s.lab.dbProxy.SetDown(false)
			if err != nil || sleepCtx(ctx, 3*time.Second) != nil {
				return err
			}
		}
		return nil
	}},
	{"instance SIGKILLed", func(ctx context.Context, s *soak, _ time.Duration) error {
		s.kills++
		return s.fleet.killAndRestart(ctx, s.kills%len(s.fleet.alive), 2*time.Second)
	}},
	{"db restart (stand-in)", func(ctx context.Context, s *soak, on time.Duration) error {
		err := s.lab.pg.exec(ctx, "", `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, s.cluster.DB)
		s.lab.dbProxy.SetDown(true)
		defer s.lab.dbProxy.SetDown(false)
		if err != nil {
			return fmt.Errorf("terminate the backends: %w", err)
		}
		return sleepCtx(ctx, min(on, 8*time.Second))
	}},
}

// faultEvent is one fault as it happened.
type faultEvent struct {
	Name  string  `json:"name"`
	AtMin float64 `json:"at_min"` // minutes since the soak began
	Secs  float64 `json:"seconds"`
	Err   string  `json:"error,omitempty"`
}

// faultPeriod spreads the faults over the run: each gets a period of d/6
// (so even a short run meets every one), at least 20 s and at most a
// minute, so a long run meets each one many times.
func faultPeriod(d time.Duration) time.Duration {
	return min(max(d/time.Duration(len(soakFaults)+1), 20*time.Second), time.Minute)
}

// rotate stages one fault per period, each held for 40 % of it (the rest
// is recovery), from one period after the start until the end is near.
func (s *soak) rotate(ctx context.Context, d time.Duration, now *atomic.Pointer[string], mu *sync.Mutex, events *[]faultEvent) {
	period := faultPeriod(d)
	for i := 0; ; i++ {
		at := s.start.Add(time.Duration(i+1) * period)
		if at.Add(period).After(s.start.Add(d)) || sleepCtx(ctx, time.Until(at)) != nil {
			return
		}
		f := soakFaults[i%len(soakFaults)]
		t0 := time.Now()
		now.Store(&f.name)
		err := f.run(ctx, s, period*2/5)
		after := "recovery from " + f.name // until the next fault
		now.Store(&after)
		ev := faultEvent{Name: f.name, AtMin: t0.Sub(s.start).Minutes(), Secs: time.Since(t0).Seconds()}
		if err != nil {
			ev.Err = err.Error()
		}
		if e := s.lab.dbProxy.Err(); e != nil {
			ev.Err += e.Error()
		}
		if e := s.lab.redisProxy.Err(); e != nil {
			ev.Err += e.Error()
		}
		mu.Lock()
		*events = append(*events, ev)
		mu.Unlock()
		fmt.Fprintf(s.lab.stdout, "  %5.1f min  %s (%.1f s)%s\n", ev.AtMin, ev.Name, ev.Secs, errSuffix(ev.Err))
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}
