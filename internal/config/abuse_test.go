package config

import (
	"strings"
	"testing"
)

// TestAbuseSettingsCompose: the order budget follows RATE_LIMIT when unset
// (RATE_LIMIT=off keeps a one-machine load test possible), a value the user
// set wins, and malformed values name their variable.
func TestAbuseSettingsCompose(t *testing.T) {
	tests := []struct {
		name                   string
		env                    map[string]string
		wantOrders, wantAuth   string
		wantMaxQuantity        int
		wantErrName, wantValue string
	}{
		{"defaults", nil, "60-M", "20-M", 10, "", ""},
		{"rate limit off turns the order budget off", map[string]string{"RATE_LIMIT": "off"}, "off", "20-M", 10, "", ""},
		{"an order budget set wins over RATE_LIMIT=off", map[string]string{"RATE_LIMIT": "off", "ORDER_RATE_LIMIT": "5-S"}, "5-S", "20-M", 10, "", ""},
		{"order budget off alone", map[string]string{"ORDER_RATE_LIMIT": "off"}, "off", "20-M", 10, "", ""},
		{"auth failures off", map[string]string{"AUTH_FAILURE_LIMIT": "off"}, "60-M", "off", 10, "", ""},
		{"max quantity set", map[string]string{"ORDER_MAX_QUANTITY": "3"}, "60-M", "20-M", 3, "", ""},
		{"order budget not a rate", map[string]string{"ORDER_RATE_LIMIT": "many"}, "", "", 0, "ORDER_RATE_LIMIT", "many"},
		{"auth limit not a rate", map[string]string{"AUTH_FAILURE_LIMIT": "1/s"}, "", "", 0, "AUTH_FAILURE_LIMIT", "1/s"},
		{"max quantity zero", map[string]string{"ORDER_MAX_QUANTITY": "0"}, "", "", 0, "ORDER_MAX_QUANTITY", "0"},
		{"max quantity beyond int32", map[string]string{"ORDER_MAX_QUANTITY": "4294967296"}, "", "", 0, "ORDER_MAX_QUANTITY", "4294967296"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(func(k string) string { return tc.env[k] })
			if tc.wantErrName != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrName) || !strings.Contains(err.Error(), tc.wantValue) {
					t.Fatalf("Load: got %v, want an error naming %s=%q", err, tc.wantErrName, tc.wantValue)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := c.Abuse; got.OrderRateLimit != tc.wantOrders || got.AuthFailureLimit != tc.wantAuth || got.OrderMaxQuantity != tc.wantMaxQuantity {
				t.Errorf("got %+v, want orders %q, auth %q, max quantity %d", got, tc.wantOrders, tc.wantAuth, tc.wantMaxQuantity)
			}
		})
	}
}
