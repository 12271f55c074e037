package netproxy_test

import (
	"bufio"
	"bytes"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// echoServer answers every line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

// newProxy starts a proxy to target, closed when the test ends.
func newProxy(t *testing.T, target string, opts netproxy.Options) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.New(target, opts)
	if err != nil {
		t.Fatalf("netproxy.New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// roundTrip sends a line through addr and reads it back.
func roundTrip(addr string) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err
}

func TestProxy(t *testing.T) {
	// Registered first, so it runs after every other cleanup: once the proxy
	// and the echo server are closed, none of their goroutines may remain.
	// live stays open past that check: only Close can end its link.
	ignore := goleak.IgnoreCurrent()
	var live net.Conn
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore)
		if live != nil {
			_ = live.Close()
		}
	})
	p := newProxy(t, echoServer(t), netproxy.Options{})
	if _, err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("up: got %v, want an echo", err)
	}

	p.SetDelay(150 * time.Millisecond)
	if d, err := roundTrip(p.Addr()); err != nil || d < 150*time.Millisecond {
		t.Errorf("delayed: got %s (%v), want an echo after ≥ 150ms", d, err)
	}
	p.SetDelay(0)

	c, err := net.Dial("tcp", p.Addr()) // a live link, cut by SetDown
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	if _, err := r.ReadString('\n'); err != nil { // linked before it is cut
		t.Fatalf("read: %v", err)
	}
	p.SetDown(true)
	if _, err := r.ReadByte(); err == nil {
		t.Error("read on a link cut by SetDown: got data, want an error")
	}
	if _, err := roundTrip(p.Addr()); err == nil {
		t.Error("down: got an echo, want the connection refused")
	}

	p.SetDown(false)
	if _, err := roundTrip(p.Addr()); err != nil {
		t.Errorf("up again: got %v, want an echo", err)
	}
	// Four links while up (two round trips, the cut link, one more round
	// trip) and the one refused while down.
	if got, want := p.Stats(), (netproxy.Stats{Conns: 4, Refused: 1}); got != want || got.Attempts() != 5 {
		t.Errorf("stats: got %+v (%d attempts), want %+v (5 attempts)", got, got.Attempts(), want)
	}
	if live, err = net.Dial("tcp", p.Addr()); err != nil {
		t.Fatalf("dial: %v", err)
	}
	if _, err := live.Write([]byte("ping\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	if _, err := bufio.NewReader(live).ReadString('\n'); err != nil {
		t.Fatalf("read: %v", err)
	}
	p.Close() // also at cleanup: must be idempotent
}

// TestProxyObserve checks that each link gets an observer of its own that
// sees what the client sent, and nothing of the answers.
func TestProxyObserve(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	var mu sync.Mutex // guards seen
	var seen []string // one entry per link: every byte its client sent
	p := newProxy(t, echoServer(t), netproxy.Options{Observe: func() func([]byte) {
		mu.Lock()
		defer mu.Unlock()
		i := len(seen)
		seen = append(seen, "")
		return func(b []byte) {
			mu.Lock()
			defer mu.Unlock()
			seen[i] += string(b)
		}
	}})
	for range 2 {
		if _, err := roundTrip(p.Addr()); err != nil {
			t.Fatalf("round trip: got %v, want an echo", err)
		}
	}
	p.Close() // waits for the links, so seen is complete
	if want := []string{"ping\n", "ping\n"}; !slices.Equal(seen, want) {
		t.Errorf("observed: got %q, want %q", seen, want)
	}
}

// TestSlowOnly: with SlowOnly set, SetDelay holds only the chunks it
// accepts. The delay (5 s) is longer than either read's deadline, so the
// prompt line arrives and the slow one does not, on any machine.
func TestSlowOnly(t *testing.T) {
	p := newProxy(t, echoServer(t), netproxy.Options{
		SlowOnly: func(b []byte) bool { return bytes.Contains(b, []byte("slow")) }})
	p.SetDelay(5 * time.Second)
	tests := []struct {
		line   string
		within time.Duration
		echoed bool
	}{
		{"ping\n", 2 * time.Second, true},
		{"slow\n", time.Second, false},
	}
	for _, tt := range tests {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		_ = c.SetDeadline(time.Now().Add(tt.within))
		if _, err := c.Write([]byte(tt.line)); err != nil {
			t.Fatalf("write %q: %v", tt.line, err)
		}
		_, err = bufio.NewReader(c).ReadString('\n')
		_ = c.Close()
		if (err == nil) != tt.echoed {
			t.Errorf("%q within %s: got echo error %v, want echoed %v", tt.line, tt.within, err, tt.echoed)
		}
	}
}
