package handlers

import (
	"net/http"
	"testing"
	"time"
)

// TestHTTPDates: a remembered Last-Modified is always the one Format writes,
// for the same second again, for another second in the same slot, and for
// an instant given in another zone.
func TestHTTPDates(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	slots := int64(len(httpDates{}.slots))
	tests := []struct {
		name string
		t    time.Time
	}{
		{"first", base},
		{"same second, another fraction", base.Add(300 * time.Millisecond)},
		{"same slot, another second", base.Add(time.Duration(slots) * time.Second)},
		{"back to the first", base},
		{"next second", base.Add(time.Second)},
		{"another zone", base.In(time.FixedZone("X", -7*3600))},
		{"before 1970", time.Date(1960, 5, 6, 7, 8, 9, 0, time.UTC)},
	}
	var d httpDates
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := d.format(tt.t), tt.t.UTC().Format(http.TimeFormat); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}
