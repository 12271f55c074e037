package app

import (
	"strings"
	"testing"
	"time"
)

// TestBreakerOpenConfig: BREAKER_OPEN_MIN/MAX set the probe schedule; the
// deprecated BREAKER_OPEN_TIMEOUT still works, as the cap; a minimum above
// the maximum is refused when set explicitly.
func TestBreakerOpenConfig(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name           string
		env            map[string]string
		wantMin        time.Duration
		wantMax        time.Duration
		wantDeprecated bool
		wantErr        string
	}{
		{"defaults", nil, 375 * ms, 30 * time.Second, false, ""},
		{"both set", map[string]string{"BREAKER_OPEN_MIN": "100ms", "BREAKER_OPEN_MAX": "10s"}, 100 * ms, 10 * time.Second, false, ""},
		{"old name caps the backoff", map[string]string{"BREAKER_OPEN_TIMEOUT": "5s"}, 375 * ms, 5 * time.Second, true, ""},
		{"new name wins over old", map[string]string{"BREAKER_OPEN_TIMEOUT": "5s", "BREAKER_OPEN_MAX": "20s"}, 375 * ms, 20 * time.Second, true, ""},
		{"old name below default min", map[string]string{"BREAKER_OPEN_TIMEOUT": "100ms"}, 100 * ms, 100 * ms, true, ""},
		{"explicit min above max", map[string]string{"BREAKER_OPEN_MIN": "1m", "BREAKER_OPEN_MAX": "10s"}, 0, 0, false, `BREAKER_OPEN_MIN="1m"`},
		{"max not a duration", map[string]string{"BREAKER_OPEN_MAX": "30"}, 0, 0, false, `BREAKER_OPEN_MAX="30"`},
	}
	for _, tc := range tests {
		c, err := loadConfig(envOf(tc.env))
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
		if c.BreakerOpenMin != tc.wantMin || c.BreakerOpenMax != tc.wantMax || c.BreakerOpenOld != tc.wantDeprecated {
			t.Errorf("%s: got min %s, max %s, deprecated %v; want %s, %s, %v", tc.name,
				c.BreakerOpenMin, c.BreakerOpenMax, c.BreakerOpenOld, tc.wantMin, tc.wantMax, tc.wantDeprecated)
		}
	}
}
