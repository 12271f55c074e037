package app

import (
	"runtime/debug"
	"testing"
)

// TestGCPercentDefault: the service's GOGC default applies only where the
// environment is silent; a GOGC the user set is left to the runtime.
func TestGCPercentDefault(t *testing.T) {
	tests := []struct {
		name string
		gogc string
		want int // the percentage in force afterwards
	}{
		{"unset: the service's default", "", defaultGCPercent},
		{"set: the runtime's reading of it stands", "50", 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Stand in for the runtime having read GOGC at start.
			prev := debug.SetGCPercent(50)
			t.Cleanup(func() { debug.SetGCPercent(prev) })
			setGCPercent(func(k string) string {
				if k == "GOGC" {
					return tt.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(50); got != tt.want {
				t.Errorf("GC percent %d, want %d", got, tt.want)
			}
		})
	}
}
