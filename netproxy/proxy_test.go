package dbtest_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stampede-guard/api/db/dbtest"
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
	p := dbtest.NewProxy(t, echoServer(t))
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
	p.SetDown(true)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read on a link cut by SetDown: got data, want an error")
	}
	if _, err := roundTrip(p.Addr()); err == nil {
		t.Error("down: got an echo, want the connection refused")
	}

	p.SetDown(false)
	if _, err := roundTrip(p.Addr()); err != nil {
		t.Errorf("up again: got %v, want an echo", err)
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
