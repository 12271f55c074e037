package middleware

import (
	"testing"
	"time"
)

// TestClockMatchesRFC3339Nano: the access log's clock writes what
// AppendFormat(RFC3339Nano) writes, across fractions, zones and seconds,
// asked in any order (the remembered second must never leak into another).
func TestClockMatchesRFC3339Nano(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		newYork = time.FixedZone("EST", -5*3600)
	}
	base := time.Date(2026, 12, 1, 21, 49, 44, 0, time.UTC)
	tests := []struct {
		name string
		t    time.Time
	}{
		{"whole second", base},
		{"nanosecond", base.Add(1)},
		{"trailing zeros", base.Add(120 * time.Millisecond)},
		{"all nine digits", base.Add(999_999_999)},
		{"same second again", base.Add(500 * time.Microsecond)},
		{"next second", base.Add(time.Second + 7)},
		{"back a second", base.Add(3)},
		{"positive offset", base.In(kolkata).Add(42)},
		{"negative offset", base.In(newYork).Add(42)},
		{"same instant in UTC", base.Add(42)},
		{"far past", time.Date(1, 1, 1, 0, 0, 0, 5, time.UTC)},
		{"year past 9999", time.Date(12000, 1, 1, 0, 0, 0, 5, time.UTC)},
	}
	var c clock
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(c.append([]byte("x"), tt.t))
			if want := string(tt.t.AppendFormat([]byte("x"), time.RFC3339Nano)); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}

func BenchmarkClock(b *testing.B) {
	var c clock
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = c.append(buf[:0], time.Now())
	}
}
