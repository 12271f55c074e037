package app

import (
	"strings"
	"testing"
)

// TestPoolerConfigErrors: a pooler setting that cannot work stops the start
// with one line naming the variable.
func TestPoolerConfigErrors(t *testing.T) {
	tests := []struct {
		env     map[string]string
		wantVar string
	}{
		{map[string]string{"DB_POOLER": "odyssey"}, "DB_POOLER"},
		{map[string]string{"DB_POOLER": "pgbouncer"}, "DATABASE_DIRECT_URL"},
	}
	for _, tc := range tests {
		if _, err := loadConfig(envOf(tc.env)); err == nil || !strings.Contains(err.Error(), tc.wantVar) {
			t.Errorf("loadConfig(%v): got %v, want an error naming %s", tc.env, err, tc.wantVar)
		}
	}
}
