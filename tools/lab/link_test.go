package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLinkProcess: the link runs in a process of its own and does what the
// lab tells it over its control endpoint: forwards, delays each round trip,
// refuses while down, counts connections, and ends with Close.
func TestLinkProcess(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	l, err := NewLink(echo.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func() (time.Duration, error) {
		c, err := net.DialTimeout("tcp", l.Addr(), 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			return 0, err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line != "ping\n" {
			t.Errorf("echo through the link: got %q", line)
		}
		return time.Since(start), err
	}

	if _, err := roundTrip(); err != nil {
		t.Fatalf("forwarding: %v", err)
	}
	const delay = 150 * time.Millisecond
	l.SetDelay(delay)
	if d, err := roundTrip(); err != nil || d < delay {
		t.Errorf("with SetDelay(%s): round trip %s, %v (want at least the delay)", delay, d, err)
	}
	l.Reset()
	l.SetDown(true)
	if _, err := roundTrip(); err == nil {
		t.Error("SetDown(true): a round trip went through")
	}
	l.SetDown(false)
	if _, err := roundTrip(); err != nil {
		t.Errorf("SetDown(false): %v", err)
	}
	s := l.Stats()
	if s.Conns != 3 || s.Refused != 1 {
		t.Errorf("stats %+v, want 3 connections forwarded and 1 refused", s)
	}
	if err := l.Err(); err != nil {
		t.Errorf("control calls: %v", err)
	}
	l.Close()
	if l.cmd.ProcessState == nil || !l.cmd.ProcessState.Exited() {
		t.Errorf("after Close the link process has not exited: %v", l.cmd.ProcessState)
	}
	l.SetDelay(time.Second) // on a closed link: recorded, not silent
	if l.Err() == nil {
		t.Error("a control call on a closed link reported no error")
	}
}

// TestBareHandlerLivesUntilStopped: the bare handler answers for as long
// as the lab holds it, garbage collections included (its stdin pipe must
// not be collected and closed), and its process ends with stop.
func TestBareHandlerLivesUntilStopped(t *testing.T) {
	// Under -race a process lingers a second at exit (GORACE atexit_sleep_ms),
	// which would hide a handler that stopped at once.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	base, stop, err := serveBare(context.Background(), `{"id":1}`, bareAsService)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	time.Sleep(200 * time.Millisecond)
	if r := get(context.Background(), base, "/products/1"); r.Status != 200 || !strings.Contains(r.Body, `"id":1`) {
		t.Errorf("after garbage collections: %+v, want the body", r)
	}
	stop()
	if r := get(context.Background(), base, "/products/1"); r.Err == "" {
		t.Errorf("after stop: %+v, want no answer", r)
	}
}
