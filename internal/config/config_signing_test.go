package config

import (
	"strings"
	"testing"
)

// TestConfigSigningKey: CACHE_SIGNING_KEY is taken as given when long
// enough, refused when short or padded, and a refusal never repeats the
// secret (config errors are logged).
func TestConfigSigningKey(t *testing.T) {
	long := strings.Repeat("s3cr3t-", 5) // 35 bytes
	for _, tc := range []struct {
		name, value string
		wantErr     string // "" = accepted
	}{
		{"unset", "", ""},
		{"32 bytes or more", long, ""},
		{"too short", "s3cr3t-short", "is 12 bytes, want at least 32"},
		{"surrounding spaces", " " + long + " ", "surrounding spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(envOf(map[string]string{"CACHE_SIGNING_KEY": tc.value}))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "" && string(cfg.CacheSigningKey) != tc.value:
				t.Errorf("key %q, want %q", cfg.CacheSigningKey, tc.value)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr != "" && strings.Contains(err.Error(), "s3cr3t"):
				t.Errorf("error repeats the secret: %v", err)
			}
		})
	}
}
