// Package hotkeys finds the keys that are read often right now, so a cache
// can treat them differently (copies on more Redis masters, a longer
// in-process TTL) without anyone listing them by hand.
//
// Each instance counts its own reads in a count-min sketch (fixed memory,
// whatever the number of distinct keys) and keeps the heaviest keys of the
// current window as candidates. When a window ends, a candidate read at
// least Threshold times per second turns hot; a hot key stays hot while its
// score, which halves every window and is lifted again by each window's
// rate, stays above Threshold/2. So a burst is promoted after one window,
// and a key that cools is demoted a few windows later, not flapping on the
// threshold. At most Top keys are hot at once.
//
// The package knows nothing of what a key means; callers decide which
// reads to count (Observe) and what being hot changes (Hot).
package hotkeys

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Config tunes a Detector. Zero values take the documented defaults.
type Config struct {
	// Threshold is the rate, in reads per second seen by this instance, at
	// which a key turns hot; default 100.
	Threshold float64
	// Top is K, the most keys hot at once; default 16.
	Top int
	// Window is how long reads are counted before rates are computed;
	// default 1 second.
	Window time.Duration
	// Sample counts one read in Sample (rates are scaled back up), for
	// instances whose read rate makes even a sketch update per read too
	// much; default 1, every read.
	Sample int
	// Width and Depth size the count-min sketch; default 4096 × 4
	// (64 KiB). Wider means fewer collisions inflating cold keys.
	Width, Depth int
	// Pinned keys are always hot: the manual override (and warm-up list).
	Pinned []string
}

func (c Config) withDefaults() Config {
	if c.Threshold <= 0 {
		c.Threshold = 100
	}
	if c.Top <= 0 {
		c.Top = 16
	}
	if c.Window <= 0 {
		c.Window = time.Second
	}
	if c.Sample <= 0 {
		c.Sample = 1
	}
	if c.Width <= 0 {
		c.Width = 4096
	}
	if c.Depth <= 0 {
		c.Depth = 4
	}
	return c
}

// decay is what a hot key's score keeps of itself per window.
const decay = 0.5

// Rate is one key's read rate over the last complete window.
type Rate struct {
	Key       string  `json:"key"`
	PerSecond float64 `json:"per_second"`
	Hot       bool    `json:"hot"`
	Pinned    bool    `json:"pinned,omitempty"`
}

// Detector tracks which keys are hot. Observe and Hot are safe for
// concurrent use; Hot takes no lock, since it is asked on every read.
type Detector struct {
	cfg    Config
	now    func() time.Time
	pinned map[string]bool
	hot    atomic.Pointer[map[string]bool] // pinned ∪ promoted; replaced whole each window
	seen   atomic.Uint64                   // reads offered, for sampling

	mu     sync.Mutex // guards everything below
	sk     *sketch
	start  time.Time         // of the current window
	cand   map[string]uint32 // the current window's heaviest keys: key → estimate
	scores map[string]float64
	top    []Rate // the last window's heaviest keys, for Top
}

// New returns a Detector whose first window starts now.
func New(cfg Config) *Detector {
	cfg = cfg.withDefaults()
	d := &Detector{
		cfg:    cfg,
		now:    time.Now,
		pinned: make(map[string]bool, len(cfg.Pinned)),
		sk:     newSketch(cfg.Width, cfg.Depth),
		cand:   make(map[string]uint32, 2*cfg.Top),
		scores: map[string]float64{},
	}
	for _, k := range cfg.Pinned {
		d.pinned[k] = true
	}
	d.start = d.now()
	d.publish()
	return d
}

// Observe counts one read of key.
func (d *Detector) Observe(key string) {
	if d.cfg.Sample > 1 && d.seen.Add(1)%uint64(d.cfg.Sample) != 0 {
		return
	}
	// The clock and the hash are read before the lock: every read of
	// every key takes it, so what it covers is what both cores wait on.
	now, h := d.now(), d.sk.hash(key)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	n := d.sk.add(h)
	if _, ok := d.cand[key]; ok || len(d.cand) < 2*d.cfg.Top {
		// Twice K candidates: a key ranked just below K this window is
		// still counted when it overtakes one above.
		d.cand[key] = n
		return
	}
	// Replace the lightest candidate if this key now outweighs it. A
	// linear scan of 2K entries, only when the key is not a candidate.
	light, least := "", n
	for k, c := range d.cand {
		if c < least {
			light, least = k, c
		}
	}
	if light != "" {
		delete(d.cand, light)
		d.cand[key] = n
	}
}

// Hot reports whether key is hot now (pinned or promoted).
func (d *Detector) Hot(key string) bool { return (*d.hot.Load())[key] }

// Top returns the last complete window's heaviest keys, the hot ones
// first, each group by rate; at most Config.Top of them.
func (d *Detector) Top() []Rate {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(d.now())
	return append([]Rate(nil), d.top...)
}

// rotate closes the windows that have ended: rates from the candidates'
// counts, scores decayed and lifted, the hot set recomputed. Called with
// mu held; cheap when the window has not ended. now may be a little older
// than the window's start (read before another caller rotated): nothing
// has ended then.
func (d *Detector) rotate(now time.Time) {
	ended := int64(now.Sub(d.start) / d.cfg.Window)
	if ended < 1 {
		return
	}
	secs := d.cfg.Window.Seconds()
	rates := make(map[string]float64, len(d.cand))
	if ended == 1 { // else the last complete window saw no reads at all
		for k, n := range d.cand {
			rates[k] = float64(n) * float64(d.cfg.Sample) / secs
		}
	}
	keep := math.Pow(decay, float64(min(ended, 64)))
	next := make(map[string]float64, len(d.scores))
	for k, s := range d.scores {
		if s = max(s*keep, rates[k]); s >= d.cfg.Threshold/2 {
			next[k] = s
		}
	}
	for k, r := range rates {
		if r >= d.cfg.Threshold {
			next[k] = max(next[k], r)
		}
	}
	if len(next) > d.cfg.Top {
		byScore := sortedKeys(next)
		for _, k := range byScore[d.cfg.Top:] {
			delete(next, k)
		}
	}
	d.scores = next
	d.top = d.topRates(rates)
	d.sk.reset()
	clear(d.cand)
	d.start = d.start.Add(time.Duration(ended) * d.cfg.Window)
	d.publish()
}

// topRates lists the hot keys (pinned or promoted) and then the heaviest
// other candidates, each by its last window's rate, at most Top in all:
// bounded, so it can label metrics.
func (d *Detector) topRates(rates map[string]float64) []Rate {
	var hot, rest []Rate
	for k := range d.pinned {
		hot = append(hot, Rate{Key: k, PerSecond: rates[k], Hot: true, Pinned: true})
	}
	for k := range d.scores {
		if !d.pinned[k] {
			hot = append(hot, Rate{Key: k, PerSecond: rates[k], Hot: true})
		}
	}
	for k, r := range rates {
		if _, ok := d.scores[k]; !ok && !d.pinned[k] {
			rest = append(rest, Rate{Key: k, PerSecond: r})
		}
	}
	for _, s := range [][]Rate{hot, rest} {
		sort.Slice(s, func(i, j int) bool {
			if s[i].PerSecond != s[j].PerSecond {
				return s[i].PerSecond > s[j].PerSecond
			}
			return s[i].Key < s[j].Key
		})
	}
	all := append(hot, rest...)
	return all[:min(len(all), d.cfg.Top)]
}

// HotCount is how many keys are hot now, pinned ones included.
func (d *Detector) HotCount() int { return len(*d.hot.Load()) }

// publish swaps in the hot set that Hot reads.
func (d *Detector) publish() {
	set := make(map[string]bool, len(d.pinned)+len(d.scores))
	for k := range d.pinned {
		set[k] = true
	}
	for k := range d.scores {
		set[k] = true
	}
	d.hot.Store(&set)
}

// sortedKeys orders keys by score, highest first (ties by key, so every
// run keeps the same ones).
func sortedKeys(scores map[string]float64) []string {
	keys := make([]string, 0, len(scores))
	for k := range scores {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if scores[keys[i]] != scores[keys[j]] {
			return scores[keys[i]] > scores[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
