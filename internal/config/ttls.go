package config

import (
	"fmt"
	"time"
)

// cacheTTLs is the freshness chain L1_TTL < CACHE_SOFT_TTL < CACHE_TTL:
// L1 must not hide a refresh, and stale must end before the hard expiry.
type cacheTTLs struct {
	L1, Soft, Hard time.Duration
	l1Set          bool
	softSet        bool
	hardSet        bool
	// hotL1 is HOT_KEY_L1_TTL as set, or -1 when unset or malformed
	// (reported here, once); readHotKeys derives it when unset.
	hotL1 time.Duration
}

// readTTLs reads the three TTLs; an unset one follows the ones that were
// set (defaults 1 s, 30 s, 10 min). L1_TTL=0 turns the L1 off.
func readTTLs(p *envParser) cacheTTLs {
	t := cacheTTLs{l1Set: p.set("L1_TTL"), softSet: p.set("CACHE_SOFT_TTL"), hardSet: p.set("CACHE_TTL")}
	t.L1 = atMostTTL(p, "L1_TTL", p.durationOrZero("L1_TTL", time.Second))
	t.Soft = atMostTTL(p, "CACHE_SOFT_TTL", p.duration("CACHE_SOFT_TTL", 30*time.Second))
	t.Hard = atLeast(p, "CACHE_TTL", atMostTTL(p, "CACHE_TTL", p.duration("CACHE_TTL", 10*time.Minute)), minEntryTTL, entryTTLWhy)
	// A hot key's L1 TTL sits in the same chain (L1_TTL ≤ it < soft):
	// set, it moves the unset ends as L1_TTL does.
	t.hotL1 = atMostTTL(p, "HOT_KEY_L1_TTL", p.durationOrZero("HOT_KEY_L1_TTL", -1))
	hotL1 := max(t.hotL1, 0)
	if !t.l1Set && hotL1 > 0 {
		t.L1 = min(t.L1, hotL1)
	}
	if !t.softSet && (t.l1Set || hotL1 > 0) {
		t.Soft = max(t.Soft, 2*t.L1, 2*hotL1)
	}
	if !t.hardSet && (t.softSet || t.l1Set || hotL1 > 0) {
		t.Hard = max(t.Hard, 2*t.Soft)
	}
	if !t.softSet && t.Soft >= t.Hard {
		t.Soft = t.Hard / 2
		// The longest L1 TTL that was set (a hot key's sits above L1_TTL).
		var l1 time.Duration
		if t.l1Set {
			l1 = t.L1
		}
		l1 = max(l1, hotL1)
		if t.Soft <= l1 && l1 < t.Hard {
			// Halfway between the two that were set: CACHE_TTL=20s with
			// L1_TTL=15s has room for a soft TTL, just not at 10 s; so has
			// CACHE_TTL=30s with HOT_KEY_L1_TTL=20s.
			t.Soft = l1 + (t.Hard-l1)/2
		}
	}
	if !t.l1Set && t.L1 >= t.Soft {
		t.L1 = t.Soft / 2
	}
	return t
}

// maxTTL bounds each TTL: the chain doubles them, and near
// time.Duration's limit CACHE_SOFT_TTL=1500000h wrapped negative and was
// refused against a CACHE_TTL it should have raised. A year is past any
// cache.
const maxTTL = 365 * 24 * time.Hour

func atMostTTL(p *envParser, name string, d time.Duration) time.Duration {
	if d > maxTTL {
		p.fail(name, p.getenv(name), "must be at most "+maxTTL.String())
		return maxTTL
	}
	return d
}

// minEntryTTL is the shortest TTL of a Redis entry: Redis keeps a key for
// a whole millisecond at least, and TTL_JITTER cuts up to half of a TTL.
// At CACHE_TTL=1ms every store failed ("invalid expire time") and every
// read went to PostgreSQL, with nothing said at start.
const (
	minEntryTTL = 10 * time.Millisecond
	entryTTLWhy = "Redis keeps an entry for a whole millisecond at least, and TTL_JITTER cuts up to half of it"
)

// atLeast refuses a set value below floor, naming why, and goes on with
// the floor, so the values derived from it raise no second error.
func atLeast(p *envParser, name string, d, floor time.Duration, why string) time.Duration {
	if d < floor {
		p.fail(name, p.getenv(name), fmt.Sprintf("must be at least %s: %s", floor, why))
		return floor
	}
	return d
}

// setOrDerived says where a value came from, for error messages.
func setOrDerived(set bool) string {
	if set {
		return "set"
	}
	return "derived"
}

func (t cacheTTLs) check() []error {
	origin := setOrDerived
	var errs []error
	if t.Soft >= t.Hard {
		errs = append(errs, fmt.Errorf("config: CACHE_SOFT_TTL=%s (%s) must be shorter than CACHE_TTL=%s (%s): stale answers need a window before the hard expiry; change one of them",
			t.Soft, origin(t.softSet), t.Hard, origin(t.hardSet)))
	}
	switch {
	case !t.softSet && t.L1 >= t.Hard:
		// The soft TTL nobody set sits below CACHE_TTL: naming it would
		// send the user to a setting they never touched.
		errs = append(errs, fmt.Errorf("config: L1_TTL=%s (%s) must be shorter than CACHE_TTL=%s (%s): L1 would outlive the entry; change one of them",
			t.L1, origin(t.l1Set), t.Hard, origin(t.hardSet)))
	case t.L1 >= t.Soft:
		errs = append(errs, fmt.Errorf("config: L1_TTL=%s (%s) must be shorter than CACHE_SOFT_TTL=%s (%s): L1 would hide refreshes; change one of them",
			t.L1, origin(t.l1Set), t.Soft, origin(t.softSet)))
	}
	return errs
}
