package main

import (
	"bytes"
	"encoding/xml"
	"math"
	"net"
	"os"
	"strings"
	"testing"
)

// TestProcReaders: the soak's /proc readers on this test's own process:
// VmRSS is read, and established sockets are counted by their remote port
// (a client's connections to the listener: 2, none to another port) and by
// their local port (the listener's accepted connections: 2; the listening
// socket itself is not a connection).
func TestProcReaders(t *testing.T) {
	kb, err := vmRSS(os.Getpid())
	if err != nil || kb < 1024 {
		t.Fatalf("VmRSS %v kB, %v: want a few MiB", kb, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
	}
	conns, err := tcpConns(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	count := func(match func(tcpConn) bool) int {
		n := 0
		for _, c := range conns {
			if match(c) {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		what  string
		match func(tcpConn) bool
		want  int
	}{
		{"to the port", func(c tcpConn) bool { return c.remote == port }, 2},
		{"to another port", func(c tcpConn) bool { return c.remote == port+1 }, 0},
		{"accepted on the port", func(c tcpConn) bool { return c.local == port }, 2},
		{"accepted on another port", func(c tcpConn) bool { return c.local == port+1 }, 0},
	} {
		if n := count(tt.match); n != tt.want {
			t.Errorf("sockets %s: %d; want %d", tt.what, n, tt.want)
		}
	}
}

// TestSoakChart: the chart is well-formed SVG with one line per instance
// process and panel, a gap (not a zero) where an instance was down.
func TestSoakChart(t *testing.T) {
	nan := gauge(math.NaN())
	in := func(life int, v gauge) instSample { return instSample{Life: life, RSSMiB: v, Goroutines: v, FDs: v} }
	r := &soakReport{Minutes: 1, Rate: 10, Faults: []faultEvent{{Name: "redis down", AtMin: 0.5}}, Samples: []soakSample{
		{AtMin: 0, Inst: []instSample{in(1, 30), in(1, 31)}},
		{AtMin: 0.5, Inst: []instSample{in(1, 40), in(1, nan)}},
		{AtMin: 1, Inst: []instSample{in(1, 41), in(2, 20)}},
	}}
	var buf bytes.Buffer
	if err := writeSoakChart(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(buf.Bytes(), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if n := strings.Count(buf.String(), "<polyline"); n != 3*3 {
		t.Errorf("%d lines, want 9 (3 lives × 3 panels)", n)
	}
	if strings.Contains(buf.String(), "NaN") {
		t.Error("a NaN reached the SVG")
	}
}
