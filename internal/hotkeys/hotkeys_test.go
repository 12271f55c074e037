package hotkeys

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeClock is advanced by the load itself: windows end after a count of
// reads, never after wall-clock time, so a busy machine cannot flake them.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestDetector(cfg Config) (*Detector, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := New(cfg)
	d.now = clk.now
	d.start = clk.t
	return d, clk
}

// feed offers reads at perSecond for dur of fake time, each read's key
// drawn by next; it returns how often each key was read.
func feed(d *Detector, clk *fakeClock, perSecond int, dur time.Duration, next func() string) map[string]int {
	counts := map[string]int{}
	step := time.Second / time.Duration(perSecond)
	for range int(dur / step) {
		k := next()
		counts[k]++
		d.Observe(k)
		clk.t = clk.t.Add(step)
	}
	return counts
}

func key(i uint64) string { return fmt.Sprintf("product:v1:{%d}", i+1) }

// TestZipfLoadDetectsTopKeys: 5000 reads/s over 1000 keys with Zipf
// (s = 1.1) popularity. Within 2 s every key read at 1.5× the threshold or
// more is hot, and no key read at under half of it is.
func TestZipfLoadDetectsTopKeys(t *testing.T) {
	const threshold = 100
	d, clk := newTestDetector(Config{Threshold: threshold, Top: 16})
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, 999)
	counts := feed(d, clk, 5000, 2*time.Second, func() string { return key(z.Uint64()) })
	d.Top() // the 2 s mark closes the second window

	secs := 2.0
	hot := 0
	for k, n := range counts {
		rate := float64(n) / secs
		switch {
		case rate >= 1.5*threshold && !d.Hot(k):
			t.Errorf("%s read %.0f/s: got not hot, want hot (threshold %d/s)", k, rate, threshold)
		case rate < threshold/2 && d.Hot(k):
			t.Errorf("%s read %.0f/s: got hot, want not hot (threshold %d/s)", k, rate, threshold)
		}
		if d.Hot(k) {
			hot++
		}
	}
	if hot < 3 {
		t.Errorf("got %d hot keys, want the Zipf head (≥ 3)", hot)
	}
	if top := d.Top(); len(top) == 0 || top[0].Key != key(0) || !top[0].Hot {
		t.Errorf("Top()[0]: got %+v, want the most read key %s, hot", top, key(0))
	}
}

// TestUniformLoadPromotesNothing: 20 000 reads/s spread evenly over 1000
// keys (20/s each) for 5 s never makes a key hot at a 100/s threshold,
// despite the sketch sharing counters between keys.
func TestUniformLoadPromotesNothing(t *testing.T) {
	d, clk := newTestDetector(Config{Threshold: 100, Top: 16})
	r := rand.New(rand.NewPCG(3, 4))
	for sec := range 5 {
		feed(d, clk, 20_000, time.Second, func() string { return key(r.Uint64N(1000)) })
		for _, rt := range d.Top() {
			if rt.Hot {
				t.Fatalf("second %d: %s got hot at %.0f/s, want no hot key under a uniform load", sec+1, rt.Key, rt.PerSecond)
			}
		}
	}
}

// TestCooledKeyIsDemoted: a key read at 1000/s turns hot; once its reads
// stop it stays hot a few windows (no flapping), then drops out, while
// other keys' reads keep the windows turning.
func TestCooledKeyIsDemoted(t *testing.T) {
	d, clk := newTestDetector(Config{Threshold: 100})
	feed(d, clk, 1000, 2*time.Second, func() string { return "hot" })
	if !d.Hot("hot") {
		t.Fatal("after 2 s at 1000/s: got not hot, want hot")
	}
	r := rand.New(rand.NewPCG(5, 6))
	feed(d, clk, 1000, time.Second, func() string { return key(r.Uint64N(1000)) })
	if !d.Hot("hot") {
		t.Error("1 s after its reads stopped: got demoted, want still hot (its score decays)")
	}
	feed(d, clk, 1000, 8*time.Second, func() string { return key(r.Uint64N(1000)) })
	if d.Hot("hot") {
		t.Error("9 s after its reads stopped: got hot, want demoted")
	}
	// With no reads at all, Top (the metrics scrape) turns the windows.
	feed(d, clk, 1000, 2*time.Second, func() string { return "again" })
	clk.t = clk.t.Add(time.Minute)
	for _, rt := range d.Top() {
		if rt.Hot {
			t.Errorf("a minute without reads: got %s hot, want none", rt.Key)
		}
	}
}

// TestAtMostTopKeysHot: 50 keys each read at 500/s, K = 8: the hot set
// holds exactly 8, and Top lists at most 8.
func TestAtMostTopKeysHot(t *testing.T) {
	d, clk := newTestDetector(Config{Threshold: 100, Top: 8})
	i := uint64(0)
	feed(d, clk, 25_000, 2*time.Second, func() string { i++; return key(i % 50) })
	hot := 0
	for j := range uint64(50) {
		if d.Hot(key(j)) {
			hot++
		}
	}
	if hot != 8 {
		t.Errorf("got %d hot keys, want 8 (Top)", hot)
	}
	if n := len(d.Top()); n > 8 {
		t.Errorf("Top(): got %d rates, want at most 8", n)
	}
}

// TestPinnedAndSampled: a pinned key is hot with no reads; with Sample = 10
// the rates are scaled back up, so a 1000/s key is still found hot.
func TestPinnedAndSampled(t *testing.T) {
	d, clk := newTestDetector(Config{Threshold: 100, Sample: 10, Pinned: []string{"manual"}})
	if !d.Hot("manual") {
		t.Error("pinned key: got not hot, want hot")
	}
	feed(d, clk, 1000, 2*time.Second, func() string { return "busy" })
	if !d.Hot("busy") {
		t.Error("1000/s sampled 1 in 10: got not hot, want hot")
	}
	top := d.Top()
	if len(top) < 2 || top[0].Key != "busy" || top[0].PerSecond < 500 || top[1].Key != "manual" || !top[1].Pinned {
		t.Errorf("Top(): got %+v, want busy near 1000/s, then manual (pinned, unread)", top)
	}
	if n := d.HotCount(); n != 2 {
		t.Errorf("HotCount(): got %d, want 2", n)
	}
}

// TestConcurrentObserve: many goroutines observing and asking at once (run
// with -race) lose no read. The fake clock stands still during the storm,
// so every read falls in one window; then it moves one window on, and the
// window's rates must be exactly the reads each key got (a count-min
// sketch only overestimates, and nine keys in 4096 × 4 counters do not
// collide in every row), and exactly the keys read at the threshold or
// more must be hot. A read lost to a race would show as a lower rate.
func TestConcurrentObserve(t *testing.T) {
	const threshold, goroutines, reads = 2000, 8, 5000
	d, clk := newTestDetector(Config{Threshold: threshold, Window: time.Second})
	want := map[string]int{}
	for g := range goroutines {
		for i := range reads {
			want[key(uint64(i%(g+2)))]++
		}
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range reads {
				k := key(uint64(i % (g + 2)))
				d.Observe(k)
				_ = d.Hot(k)
				if i%500 == 0 {
					_ = d.Top()
				}
			}
		})
	}
	wg.Wait()
	clk.t = clk.t.Add(time.Second) // after wg.Wait: no reader races the clock
	got := map[string]float64{}
	for _, r := range d.Top() {
		got[r.Key] = r.PerSecond
	}
	hot := 0
	for k, n := range want {
		if got[k] != float64(n) {
			t.Errorf("%s: rate %v/s, want %d/s (every read of the 1 s window counted)", k, got[k], n)
		}
		if d.Hot(k) != (n >= threshold) {
			t.Errorf("%s read %d/s: hot %v, want %v (threshold %d/s)", k, n, d.Hot(k), n >= threshold, threshold)
		}
		if n >= threshold {
			hot++
		}
	}
	if hot == 0 || hot == len(want) {
		t.Fatalf("%d of %d keys at or over the threshold: the test must have both kinds", hot, len(want))
	}
}
