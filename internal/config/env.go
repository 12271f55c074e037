package config

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// envParser reads variables and collects every error, so Load reads
// as a flat list of names and defaults and a user fixes all mistakes in one
// go rather than one restart each.
type envParser struct {
	getenv func(string) string
	errs   []error
}

func (p *envParser) fail(name, value, why string) {
	p.errs = append(p.errs, fmt.Errorf("config: %s=%q: %s", name, value, why))
}

// err is every mistake found, one per line, or nil.
func (p *envParser) err() error { return errors.Join(p.errs...) }

// set reports whether the user gave name a value; derived defaults follow
// only the values that were set.
func (p *envParser) set(name string) bool { return strings.TrimSpace(p.getenv(name)) != "" }

func (p *envParser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

// parse reads name with conv: unset or blank leaves def, and a value conv
// refuses (ok false) is reported with why and leaves def too.
func parse[T any](p *envParser, name string, def T, why string, conv func(string) (v T, ok bool)) T {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	x, ok := conv(v)
	if !ok {
		p.fail(name, v, why)
		return def
	}
	return x
}

func (p *envParser) duration(name string, def time.Duration) time.Duration {
	return parse(p, name, def, "must be a positive duration such as 300ms or 5s", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d > 0
	})
}

func (p *envParser) durationOrZero(name string, def time.Duration) time.Duration {
	return parse(p, name, def, "must be a duration such as 300ms or 5s", func(v string) (time.Duration, bool) {
		if v == "0" {
			return 0, true
		}
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= 0
	})
}

func (p *envParser) positive(name string, def int) int {
	return p.wholeNumber(name, def, 1, "must be a positive whole number")
}

// atMost refuses n above most: a count that is later narrowed (to a pool's
// int32, a breaker's uint32) must not wrap around into a small or negative
// number.
func (p *envParser) atMost(name string, n, most int) int {
	if n > most {
		p.fail(name, strconv.Itoa(n), fmt.Sprintf("must be at most %d", most))
		return most
	}
	return n
}

func (p *envParser) nonNegative(name string, def int) int {
	return p.wholeNumber(name, def, 0, "must be a whole number, 0 or more")
}

// wholeNumber parses an integer of at least least; why is the message that
// names the rule when it is broken.
func (p *envParser) wholeNumber(name string, def, least int, why string) int {
	return parse(p, name, def, why, func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= least
	})
}

func (p *envParser) float(name string, def float64) float64 {
	return parse(p, name, def, "must be a positive number, at most 1000000", func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil && f > 0 && f <= 1e6
	})
}

func (p *envParser) boolean(name string, def bool) bool {
	return parse(p, name, def, "must be true or false", func(v string) (bool, bool) {
		b, err := strconv.ParseBool(v)
		return b, err == nil
	})
}

func (p *envParser) oneOf(name, def string, allowed ...string) string {
	v := p.str(name, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	var named []string // "" is allowed as leaving it unset, not a value to name
	for _, a := range allowed {
		if a != "" {
			named = append(named, a)
		}
	}
	msg := "must be one of " + strings.Join(named, ", ")
	if len(named) < len(allowed) {
		msg += ", or unset"
	}
	p.fail(name, v, msg)
	return def
}

func (p *envParser) cidrs(name string) []string {
	var out []string
	for _, s := range splitList(p.getenv(name)) {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				p.fail(name, s, "must be a comma-separated list of CIDRs such as 10.0.0.0/8")
				return nil
			}
		}
		out = append(out, s)
	}
	return out
}

func (p *envParser) ids(name string) []int64 {
	var out []int64
	for _, s := range splitList(p.getenv(name)) {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			p.fail(name, s, "must be a comma-separated list of positive product ids")
			return nil
		}
		out = append(out, id)
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// namespace reads a key prefix: letters, digits, '.', '_' and '-' only, so
// it can neither break a {hash tag} nor turn into a SCAN pattern.
func (p *envParser) namespace(name string) string {
	v := strings.TrimSpace(p.getenv(name))
	if len(v) > 64 || strings.TrimFunc(v, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
	}) != "" {
		p.fail(name, v, "must be at most 64 letters, digits, '.', '_' or '-'")
		return ""
	}
	if slices.Contains(unnamespacedPrefixes, v) {
		// "lock" would name its entries "lock:product:v1:{42}": the lock
		// of product 42 for an app on the same database without one.
		p.fail(name, v, "must not be a prefix the app's keys carry without a namespace ("+strings.Join(unnamespacedPrefixes, ", ")+"): an app without one on the same Redis database would read its keys as its own")
		return ""
	}
	return v
}

// unnamespacedPrefixes are the first segments of the app's Redis keys and
// channels without CACHE_NAMESPACE (docs/architecture.md, "Redis keys").
var unnamespacedPrefixes = []string{"product", "lock", "ratelimit", "quota", "job", "cache"}

// fraction reads a number in [0, most].
func (p *envParser) fraction(name string, def, most float64) float64 {
	return parse(p, name, def, fmt.Sprintf("must be a number from 0 to %g", most), func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil && f >= 0 && f <= most
	})
}

// apiKeys reads bearer keys. A short key could be guessed, and a key with
// spaces or control characters could never be sent in a header.
func (p *envParser) apiKeys(name string) []string {
	keys := splitList(p.getenv(name))
	for _, k := range keys {
		if len(k) < 16 || len(k) > 256 || strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			p.fail(name, "(hidden)", "each key must be 16 to 256 printable ASCII characters without spaces")
			return nil
		}
	}
	return keys
}
