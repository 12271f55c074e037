package main

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP link the lab controls, placed between the instances and
// PostgreSQL or Redis. It makes the dependency slow (SetDelay) or gone
// (SetDown) without touching the shared service, and it counts what crossed
// it: connection attempts and, for PostgreSQL, Execute messages (one per
// extended-protocol query), so a phase of an experiment can be measured on
// the wire while PostgreSQL's own counters are read at the end.
type Proxy struct {
	ln     net.Listener
	target string
	pg     bool          // parse the PostgreSQL frontend protocol to count queries
	stop   chan struct{} // closed by Close: cuts delays short
	wg     sync.WaitGroup
	delay  atomic.Int64 // nanoseconds added before each chunk sent upstream

	conns    atomic.Int64 // connection attempts accepted while up
	refused  atomic.Int64 // connection attempts refused while down
	executes atomic.Int64 // PostgreSQL Execute messages forwarded upstream

	mu     sync.Mutex // guards down, closed and live
	down   bool
	closed bool
	live   map[net.Conn]struct{} // both ends of every open link
}

// ProxyStats is a snapshot of a proxy's counters.
type ProxyStats struct {
	Conns    int64 `json:"conns"`
	Refused  int64 `json:"refused"`
	Executes int64 `json:"executes"`
}

// Attempts is every connection attempt, forwarded or refused.
func (s ProxyStats) Attempts() int64 { return s.Conns + s.Refused }

// Sub is the difference of two snapshots: what happened in between.
func (s ProxyStats) Sub(o ProxyStats) ProxyStats {
	return ProxyStats{Conns: s.Conns - o.Conns, Refused: s.Refused - o.Refused, Executes: s.Executes - o.Executes}
}

// NewProxy listens on 127.0.0.1:0 and forwards every connection to target.
// With pg set, it counts the PostgreSQL Execute messages going upstream.
func NewProxy(target string, pg bool) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, pg: pg, stop: make(chan struct{}), live: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay delays every chunk forwarded upstream by d, so each request and
// answer round trip costs about d more.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetDown(true) cuts every open link and refuses new ones (accepted, then
// reset at once); SetDown(false) forwards again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		p.cutLocked()
	}
}

// Stats returns the counters so far.
func (p *Proxy) Stats() ProxyStats {
	return ProxyStats{Conns: p.conns.Load(), Refused: p.refused.Load(), Executes: p.executes.Load()}
}

// Reset puts the proxy back to a fast, working link.
func (p *Proxy) Reset() {
	p.SetDelay(0)
	p.SetDown(false)
}

// Close stops listening, cuts every link and waits for every goroutine the
// proxy started. Safe to call more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
		_ = p.ln.Close()
		p.cutLocked()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) cutLocked() {
	for c := range p.live {
		_ = c.Close()
	}
	clear(p.live)
}

// track registers c and one goroutine (under the lock, so Close cannot miss
// it), or refuses c when the proxy is down or closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, like a refused connection
		}
		_ = c.Close()
		return false
	}
	p.live[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.live, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		if p.track(client) {
			p.conns.Add(1)
			go p.link(client)
		} else {
			p.refused.Add(1)
		}
	}
}

// link dials target for one client and copies both ways until either side
// ends; closing both ends then ends the other direction too.
func (p *Proxy) link(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	upstream, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	go func() {
		defer p.wg.Done()
		p.copy(client, upstream, false, nil)
		_ = client.Close()
	}()
	var parser *pgParser
	if p.pg {
		parser = &pgParser{}
	}
	p.copy(upstream, client, true, parser)
	_ = upstream.Close()
}

// copy forwards src to dst until either fails. Upstream (toward target),
// each chunk waits for the current delay first and is fed to the parser.
func (p *Proxy) copy(dst, src net.Conn, upstream bool, parser *pgParser) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && upstream {
			if !p.sleep() {
				return
			}
			if parser != nil {
				p.executes.Add(int64(parser.feed(buf[:n])))
			}
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed end
		}
	}
}

// sleep waits the current delay; false if the proxy closed meanwhile.
func (p *Proxy) sleep() bool {
	d := time.Duration(p.delay.Load())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	}
}

// PostgreSQL frontend protocol codes of the untyped first messages.
const (
	pgSSLRequest    = 80877103
	pgGSSEncRequest = 80877104
)

// pgParser follows the PostgreSQL frontend message stream of one connection
// across chunk boundaries and counts Execute ('E') messages. The first
// message (startup, SSL or GSS request, cancel) has no type byte: a length
// and a code; every later one is a type byte and a length.
type pgParser struct {
	typed bool    // past the startup message
	hdr   [8]byte // header being assembled
	n     int     // bytes of hdr filled
	skip  int     // body bytes of the current message still to pass
}

// feed consumes one chunk and returns how many Execute messages began in it.
func (p *pgParser) feed(b []byte) int {
	executes := 0
	for len(b) > 0 {
		if p.skip > 0 {
			k := min(p.skip, len(b))
			p.skip -= k
			b = b[k:]
			continue
		}
		size := 5
		if !p.typed {
			size = 8
		}
		k := copy(p.hdr[p.n:size], b)
		p.n += k
		b = b[k:]
		if p.n < size {
			return executes
		}
		p.n = 0
		if !p.typed {
			length := int(binary.BigEndian.Uint32(p.hdr[0:4]))
			code := binary.BigEndian.Uint32(p.hdr[4:8])
			p.skip = max(0, length-8)
			// After an SSL or GSS request the real startup message follows,
			// untyped too.
			p.typed = code != pgSSLRequest && code != pgGSSEncRequest
			continue
		}
		if p.hdr[0] == 'E' {
			executes++
		}
		p.skip = max(0, int(binary.BigEndian.Uint32(p.hdr[1:5]))-4)
	}
	return executes
}
