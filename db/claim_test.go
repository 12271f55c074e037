package db

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGateClaimJudgesAsEnterWould: with no claim outstanding, claiming
// gives the verdict entering would, and releasing the claim leaves the gate
// as it was: a free slot and a wait that fits are admitted; a full queue
// cap and a wait beyond the caller's share of its deadline are refused.
func TestGateClaimJudgesAsEnterWould(t *testing.T) {
	cases := []struct {
		name     string
		priority Priority
		free     bool // a connection is free
		wait     time.Duration
		e        entry
		refused  bool
	}{
		{"free slot", Normal, true, 0, entry{byDeadline: true}, false},
		{"wait fits half the deadline", Normal, false, 300 * time.Millisecond, entry{byDeadline: true}, false},
		{"wait beyond half the deadline", Normal, false, 600 * time.Millisecond, entry{byDeadline: true}, true},
		{"checkout may wait it all", Critical, false, 600 * time.Millisecond, entry{byDeadline: true}, false},
		{"queue cap reached", Normal, false, 0, entry{maxWaiting: 0, hasMax: true}, true},
		{"queue cap not reached", Normal, false, 0, entry{maxWaiting: 1, hasMax: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, held := fullGate(t, 1, 0)
			if tc.free {
				held[0]()
			}
			ctx, cancel := context.WithTimeout(WithClass(context.Background(), &Class{Priority: tc.priority}), time.Second)
			defer cancel()
			c, got := g.claim(ctx, fixedWait(tc.wait), tc.e)
			if (got != nil) != tc.refused {
				t.Errorf("claim: %v, want refused %v", got, tc.refused)
			}
			if c != nil {
				c.release()
				c.release() // idempotent
			}
			if g.queued() != 0 || g.claims != 0 || (tc.free && g.free != 1) {
				t.Errorf("claiming and releasing changed the gate: %d queued, %d claims, %d free", g.queued(), g.claims, g.free)
			}
			if !tc.refused && !tc.free {
				return // entering would queue: nothing more to compare at once
			}
			leave, err := g.enter(ctx, fixedWait(tc.wait), tc.e)
			if _, isRefusal := err.(*RefusedError); isRefusal != tc.refused {
				t.Errorf("enter disagrees: %v, want refused %v", err, tc.refused)
			}
			if leave != nil {
				leave()
			}
		})
	}
}

// TestClaimsCountAsDemand is the refusal scenario at the gate: 200 callers
// that have not reached it yet (each still has Redis round trips to make)
// claim at once, with 2 connections and a queue cap of 4. Only the pool and
// its queue may be admitted: without claims counting as demand, every one
// of them saw an empty gate, went on to its round trips, and was refused
// only on arrival. A claimant that arrives uses its own place (it is not
// refused by the claims behind it), and a released claim lets the next in.
func TestClaimsCountAsDemand(t *testing.T) {
	const conns, maxWaiting, burst = 2, 4, 200
	g := newGate(conns, 0)
	e := entry{byDeadline: true, maxWaiting: maxWaiting, hasMax: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex
		claims  []*claim
		refused int
		wg      sync.WaitGroup
	)
	for range burst {
		wg.Go(func() {
			c, err := g.claim(ctx, 10*time.Millisecond, e)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused++
				return
			}
			claims = append(claims, c)
		})
	}
	wg.Wait()
	if len(claims) != conns+maxWaiting || refused != burst-conns-maxWaiting {
		t.Fatalf("%d admitted, %d refused; want %d admitted (the pool and its queue), %d refused",
			len(claims), refused, conns+maxWaiting, burst-conns-maxWaiting)
	}

	// The first claimant arrives: it takes a connection with its own place,
	// though the other five places are still claimed.
	leave, err := g.enter(context.WithValue(ctx, claimKey{}, claims[0]), 10*time.Millisecond, e)
	if err != nil {
		t.Fatalf("a claimant arriving: %v, want a connection", err)
	}
	if g.claims != conns+maxWaiting-1 {
		t.Errorf("after one claimant arrived: %d claims, want %d", g.claims, conns+maxWaiting-1)
	}
	claims[0].release() // after arriving: a no-op
	if g.claims != conns+maxWaiting-1 {
		t.Errorf("releasing an arrived claim changed the count: %d claims", g.claims)
	}
	if _, err := g.claim(ctx, 10*time.Millisecond, e); err == nil {
		t.Errorf("a claim with the pool and its queue taken or claimed was admitted")
	}
	claims[1].release()
	c, refusal := g.claim(ctx, 10*time.Millisecond, e)
	if refusal != nil {
		t.Fatalf("a claim after one was released: %v, want admitted", refusal)
	}
	c.release()
	leave()
}

// TestClaimBorrowsTheReserve: while no checkout waits, a read's claim may
// count on the checkout reserve as enter would hand it out (mayTake): two
// connections, one reserved, no queue allowed: two reads claim at once, and
// a third is refused.
func TestClaimBorrowsTheReserve(t *testing.T) {
	g := newGate(2, 1)
	ctx := WithClass(context.Background(), &Class{Priority: Normal, MaxWaiting: 0, Capped: true})
	e := entry{maxWaiting: 0, hasMax: true}
	var got []*claim
	for i := range 3 {
		c, refused := g.claim(ctx, fixedWait(0), e)
		if want := i < 2; (refused == nil) != want {
			t.Errorf("claim %d: refused %v, want admitted %v", i+1, refused, want)
		}
		if c != nil {
			got = append(got, c)
		}
	}
	for _, c := range got {
		c.release()
	}
}
