package db

import (
	"fmt"
	"slices"
	"testing"
)

// TestFallbackWatchReportsEachMove: a run of connections to the same side
// is reported once, at its first connection, and nothing before the first
// move to the fallback.
func TestFallbackWatchReportsEachMove(t *testing.T) {
	const own, fb = "10.0.0.1:5432", "10.0.0.2:5432"
	tests := []struct {
		name   string
		dials  []string
		want   []string
		onLast bool
	}{
		{"own servers only", []string{own, own, own}, nil, false},
		{"to the fallback", []string{own, fb, fb}, []string{"true " + fb}, true},
		{"to the fallback and back", []string{fb, fb, own, own}, []string{"true " + fb, "false " + own}, false},
		{"back and forth", []string{fb, own, fb}, []string{"true " + fb, "false " + own, "true " + fb}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &fallbackWatch{addrs: map[string]bool{fb: true}, onSwitch: func(on bool, addr string) {
				got = append(got, fmt.Sprintf("%t %s", on, addr))
			}}
			for _, d := range tt.dials {
				w.dialled(d)
			}
			if !slices.Equal(got, tt.want) || w.onFallback() != tt.onLast {
				t.Errorf("moves %q, on fallback %t; want %q, %t", got, w.onFallback(), tt.want, tt.onLast)
			}
		})
	}
}
