package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// instSample is one instance at one moment; NaN where it could not be read
// (the instance was down).
type instSample struct {
	Life       int   `json:"life"` // 1 for the first process of the slot, 2 after one restart…
	RSSMiB     gauge `json:"rss_mib"`
	Goroutines gauge `json:"goroutines"`
	FDs        gauge `json:"open_fds"`
	PoolConns  gauge `json:"pool_conns"`  // main + reports pools, acquired + idle
	RedisConns gauge `json:"redis_conns"` // TCP connections to the Redis link
	// ClientConns are the load generator's connections to the instance
	// (local port = its HTTP port): their number is the client's choice (it
	// keeps idle ones for 30 s after a fault made it open more), so the
	// leak check judges the instance's fds and goroutines without them.
	ClientConns gauge `json:"client_conns"`
}

// gauge is a sampled figure: NaN when it could not be read, null in JSON.
type gauge float64

func (g gauge) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(g)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(g))
}

func (g *gauge) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*g = gauge(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(g))
}

// soakSample is every instance at one moment.
type soakSample struct {
	AtMin float64      `json:"at_min"`
	Inst  []instSample `json:"instances"`
}

// sampleInstance reads slot's RSS from /proc, its goroutines, fds and pool
// connections from /metrics, and counts its sockets connected to the Redis
// link (redisPort): the app exports no Redis pool gauge.
func sampleInstance(ctx context.Context, f *fleet, slot, redisPort int) instSample {
	nan := gauge(math.NaN())
	s := instSample{RSSMiB: nan, Goroutines: nan, FDs: nan, PoolConns: nan, RedisConns: nan, ClientConns: nan}
	pid, life, base := f.pid(slot)
	s.Life = life
	if pid == 0 {
		return s
	}
	if kb, err := vmRSS(pid); err == nil {
		s.RSSMiB = gauge(kb / 1024)
	}
	if m, err := scrape(ctx, base, ""); err == nil {
		s.Goroutines, s.FDs = gauge(m["go_goroutines"]), gauge(m["process_open_fds"])
		s.PoolConns = 0
		for k, v := range m {
			if strings.HasPrefix(k, "stampede_db_pool_connections{") &&
				(strings.Contains(k, `state="acquired"`) || strings.Contains(k, `state="idle"`)) {
				s.PoolConns += gauge(v)
			}
		}
	}
	if conns, err := tcpConns(pid); err == nil {
		httpPort := -1 // no client connection matches it if base cannot be read
		if u, err := url.Parse(base); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				httpPort = p
			}
		}
		s.RedisConns, s.ClientConns = 0, 0
		for _, c := range conns {
			switch {
			case c.remote == redisPort:
				s.RedisConns++
			case c.local == httpPort:
				s.ClientConns++
			}
		}
	}
	return s
}

// ownFDs is the instance's open fds less its clients' connections: what a
// leak of the instance's own (a socket, a file) would grow.
func (s instSample) ownFDs() gauge { return s.FDs - s.ClientConns }

// ownGoroutines is the instance's goroutines less one per client
// connection, the goroutine net/http keeps reading each one.
func (s instSample) ownGoroutines() gauge { return s.Goroutines - s.ClientConns }

// vmRSS is the VmRSS line of /proc/<pid>/status, in kB.
func vmRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				return strconv.ParseFloat(f[0], 64)
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// tcpConn is one established TCP socket's local and remote ports.
type tcpConn struct{ local, remote int }

// tcpConns lists pid's established TCP sockets, in one read of its fds:
// the inodes of its socket fds, matched in /proc/<pid>/net/tcp and tcp6.
func tcpConns(pid int) ([]tcpConn, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if ino, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var conns []tcpConn
	for _, file := range []string{"tcp", "tcp6"} {
		fh, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "01" || !inodes[f[9]] {
				continue
			}
			conns = append(conns, tcpConn{local: hexPort(f[1]), remote: hexPort(f[2])})
		}
		fh.Close()
	}
	return conns, nil
}

// hexPort is the port of an address as /proc/net/tcp writes it
// (0100007F:1F90); -1 when it cannot be read.
func hexPort(addr string) int {
	_, port, _ := strings.Cut(addr, ":")
	p, err := strconv.ParseInt(port, 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}
