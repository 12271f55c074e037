package dbtest

import (
	"testing"

	"github.com/stampede-guard/api/netproxy"
)

// NewProxy starts a netproxy.Proxy to target (host:port), for a test that
// makes PostgreSQL or Redis unreachable (SetDown) or slow (SetDelay) under
// a running app. It fails the test if the proxy cannot listen, and closes
// the proxy when the test ends.
func NewProxy(t testing.TB, target string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.New(target, netproxy.Options{})
	if err != nil {
		t.Fatalf("dbtest: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
