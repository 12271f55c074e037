package middleware

import (
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestClientIPIsGinsClientIP: the shortcut answers what gin's ClientIP
// answers, on an engine set up as main sets it up, trusting a proxy or not.
func TestClientIPIsGinsClientIP(t *testing.T) {
	tests := []struct {
		name, remote, forwarded string
	}{
		{"IPv4 peer", "192.0.2.7:5555", ""},
		{"IPv6 peer", "[2001:db8::7]:5555", ""},
		{"IPv4-mapped peer", "[::ffff:192.0.2.7]:5555", ""},
		{"no port", "192.0.2.7", ""},
		{"forwarded by an untrusted peer", "192.0.2.7:5555", "198.51.100.1"},
		{"forwarded by the trusted proxy", "10.1.2.3:5555", "198.51.100.1, 10.1.2.3"},
	}
	for _, trusted := range [][]string{nil, {"10.0.0.0/8"}} {
		engine := gin.New()
		if err := engine.SetTrustedProxies(trusted); err != nil {
			t.Fatal(err)
		}
		engine.RemoteIPHeaders = []string{forwardedFor}
		var got, want string
		engine.GET("/", func(c *gin.Context) { got, want = clientIP(c), c.ClientIP() })
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req := httptest.NewRequest("GET", "/", nil)
				req.RemoteAddr = tt.remote
				if tt.forwarded != "" {
					req.Header.Set(forwardedFor, tt.forwarded)
				}
				engine.ServeHTTP(httptest.NewRecorder(), req)
				if got != want {
					t.Errorf("trusting %v: clientIP %q, ClientIP %q", trusted, got, want)
				}
			})
		}
	}
}
