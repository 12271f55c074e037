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
// VmRSS is read, and the sockets connected to a port are counted (two
// connections to the listener, none to another port).
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
	}
	for _, tt := range []struct{ port, want int }{{port, 2}, {port + 1, 0}} {
		if n, err := socketsTo(os.Getpid(), tt.port); err != nil || n != tt.want {
			t.Errorf("sockets to port %d: %d, %v; want %d", tt.port, n, err, tt.want)
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
