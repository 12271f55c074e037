package config

import (
	"strings"
	"testing"
	"time"
)

// TestBreakerOpenConfig: BREAKER_OPEN_MIN/MAX set the probe schedule; an
// unset minimum above the maximum follows it down; a minimum above the
// maximum is refused when set explicitly.
func TestBreakerOpenConfig(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		env     map[string]string
		wantMin time.Duration
		wantMax time.Duration
		wantErr string
	}{
		{"defaults", nil, 375 * ms, 30 * time.Second, ""},
		{"both set", map[string]string{"BREAKER_OPEN_MIN": "100ms", "BREAKER_OPEN_MAX": "10s"}, 100 * ms, 10 * time.Second, ""},
		{"unset min follows a low max", map[string]string{"BREAKER_OPEN_MAX": "100ms"}, 100 * ms, 100 * ms, ""},
		{"explicit min above max", map[string]string{"BREAKER_OPEN_MIN": "1m", "BREAKER_OPEN_MAX": "10s"}, 0, 0, `BREAKER_OPEN_MIN="1m"`},
		{"max not a duration", map[string]string{"BREAKER_OPEN_MAX": "30"}, 0, 0, `BREAKER_OPEN_MAX="30"`},
	}
	for _, tc := range tests {
		c, err := Load(envOf(tc.env))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got error %v, want one naming %s", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: got error %v, want nil", tc.name, err)
			continue
		}
		if c.BreakerOpenMin != tc.wantMin || c.BreakerOpenMax != tc.wantMax {
			t.Errorf("%s: got min %s, max %s; want %s, %s", tc.name,
				c.BreakerOpenMin, c.BreakerOpenMax, tc.wantMin, tc.wantMax)
		}
	}
}
