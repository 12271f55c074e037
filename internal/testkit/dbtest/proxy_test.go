package dbtest_test

import (
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestNewProxyClosesAtCleanup: the proxy a test gets is closed when that
// test ends, with none of its goroutines left behind. (The proxy itself is
// tested in package netproxy.)
func TestNewProxyClosesAtCleanup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a target; never dialled
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	ignore := goleak.IgnoreCurrent()
	var addr string
	t.Run("user", func(t *testing.T) {
		addr = dbtest.NewProxy(t, ln.Addr().String()).Addr()
	})
	goleak.VerifyNone(t, ignore)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("dial %s after the test ended: got a connection, want refused", addr)
	}
}
