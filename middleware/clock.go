package middleware

import (
	"sync/atomic"
	"time"
)

// clock writes a time as slog's JSON handler does (RFC 3339 with
// nanoseconds, trailing zeros dropped), formatting the date, the clock
// and the zone once per second: time.Format re-derives all three for every
// access line, a fifth of the line's cost, though within one second only
// the fraction changes.
type clock struct {
	last atomic.Pointer[second]
}

// second is one second's text, split around where the fraction goes.
type second struct {
	unix       int64
	loc        *time.Location
	date, zone string // "2006-01-02T15:04:05", "Z07:00"
}

// append is t.AppendFormat(b, time.RFC3339Nano).
func (c *clock) append(b []byte, t time.Time) []byte {
	s := c.last.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		text := t.Format(time.RFC3339) // a whole second: no fraction
		if len(text) < len("2006-01-02T15:04:05Z") || text[19] != 'Z' && text[19] != '+' && text[19] != '-' {
			return t.AppendFormat(b, time.RFC3339Nano) // a year past 9999
		}
		s = &second{unix: t.Unix(), loc: t.Location(), date: text[:19], zone: text[19:]}
		c.last.Store(s)
	}
	b = append(b, s.date...)
	if ns := t.Nanosecond(); ns != 0 {
		var digits [10]byte
		digits[0] = '.'
		for i := 9; i > 0; i-- {
			digits[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(digits)
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return append(b, s.zone...)
}
