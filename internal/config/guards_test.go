package config

import (
	"strings"
	"testing"
)

// TestGuardsJudgeMeaning: the union of TRUSTED_PROXIES may not hold every
// IPv4 or every IPv6 address however it is spelt; ADMIN_TOKEN has a
// minimum length (and the error never shows it); an admin listener that is
// not loopback needs a token.
func TestGuardsJudgeMeaning(t *testing.T) {
	const token = "0123456789abcdef" // 16 characters: the minimum
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string // "" = accepted
	}{
		{"proxies: two halves of IPv4", map[string]string{"TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/1"}, "TRUSTED_PROXIES"},
		{"proxies: quarters, out of order", map[string]string{"TRUSTED_PROXIES": "192.0.0.0/2,0.0.0.0/1,128.0.0.0/2"}, "TRUSTED_PROXIES"},
		{"proxies: overlapping, unmasked", map[string]string{"TRUSTED_PROXIES": "10.1.2.3/1,64.0.0.0/2,128.0.0.0/1"}, "TRUSTED_PROXIES"},
		{"proxies: IPv4-mapped range", map[string]string{"TRUSTED_PROXIES": "::ffff:0:0/96"}, "TRUSTED_PROXIES"},
		{"proxies: two halves of IPv6", map[string]string{"TRUSTED_PROXIES": "::/1,8000::/1"}, "TRUSTED_PROXIES"},
		{"proxies: every address, spelt plainly", map[string]string{"TRUSTED_PROXIES": "0.0.0.0/0"}, "TRUSTED_PROXIES"},
		{"proxies: a gap left", map[string]string{"TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/2,255.255.255.255"}, ""},
		{"proxies: half of IPv4", map[string]string{"TRUSTED_PROXIES": "0.0.0.0/1,10.0.0.0/8"}, ""},
		{"proxies: private ranges", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,172.16.0.0/12,fd00::/8"}, ""},
		{"proxies: every address, allowed", map[string]string{"TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/1", "TRUSTED_PROXIES_ALLOW_ALL": "true"}, ""},
		{"admin token: three characters", map[string]string{"ADMIN_TOKEN": "zZ9"}, "ADMIN_TOKEN"},
		{"admin token: 15 characters", map[string]string{"ADMIN_TOKEN": token[:15]}, "ADMIN_TOKEN"},
		{"admin token: 16 characters", map[string]string{"ADMIN_TOKEN": token}, ""},
		{"admin: every interface, no token", map[string]string{"ADMIN_ADDR": ":8081"}, "ADMIN_ADDR"},
		{"admin: 0.0.0.0, no token", map[string]string{"ADMIN_ADDR": "0.0.0.0:8081"}, "ADMIN_ADDR"},
		{"admin: private address, no token", map[string]string{"ADMIN_ADDR": "10.0.0.5:8081"}, "ADMIN_ADDR"},
		{"admin: a name, no token", map[string]string{"ADMIN_ADDR": "app:8081"}, "ADMIN_ADDR"},
		{"admin: every interface, token", map[string]string{"ADMIN_ADDR": ":8081", "ADMIN_TOKEN": token}, ""},
		{"admin: loopback, no token", map[string]string{"ADMIN_ADDR": "127.0.0.1:8081"}, ""},
		{"admin: localhost, no token", map[string]string{"ADMIN_ADDR": "localhost:8081"}, ""},
		{"admin: IPv6 loopback, no token", map[string]string{"ADMIN_ADDR": "[::1]:8081"}, ""},
		{"admin: off", map[string]string{"ADMIN_ADDR": "off"}, ""},
		{"admin: default", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(envOf(tc.env))
			switch {
			case tc.wantVar == "" && err != nil:
				t.Fatalf("Load(%v): %v; want accepted", tc.env, err)
			case tc.wantVar != "" && err == nil:
				t.Fatalf("Load(%v) accepted; want an error naming %s", tc.env, tc.wantVar)
			case err != nil && !strings.Contains(err.Error(), tc.wantVar):
				t.Errorf("error %q does not name %s", err, tc.wantVar)
			}
			if tok := tc.env["ADMIN_TOKEN"]; err != nil && tok != "" && strings.Contains(err.Error(), tok) {
				t.Errorf("error %q shows the admin token", err)
			}
		})
	}
}
