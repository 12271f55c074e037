package dbtest

import (
	"sync/atomic"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/netproxy"
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

// NewPGProxy is NewProxy to PostgreSQL that also counts the queries crossing
// it (Execute messages), for a test that proves how many loads reached the
// database. The counter starts at zero and includes start-up queries.
func NewPGProxy(t testing.TB, target string) (*netproxy.Proxy, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	p, err := netproxy.New(target, netproxy.Options{Observe: netproxy.CountPGExecutes(&n)})
	if err != nil {
		t.Fatalf("dbtest: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p, &n
}
