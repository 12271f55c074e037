// Package netproxy is a TCP link you control, placed between an application
// and one of its dependencies (PostgreSQL, Redis). Pointing the app's URL at
// the proxy lets a test or an experiment make the dependency unreachable
// (SetDown) or slow (SetDelay) and bring it back, without stopping the
// shared real service and without any hook inside the application: the app
// sees exactly what a network partition or a congested link would show it.
// The proxy counts connection attempts and can let its caller observe what
// the client sends, so what crossed the link can be measured on the wire.
package netproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds the dial to the target for each accepted connection.
const dialTimeout = 5 * time.Second

// Options tune a Proxy. The zero value forwards every byte unobserved.
type Options struct {
	// Observe, if set, is called once for each link (each client
	// connection), and the function it returns is given every chunk that
	// client sends toward the target, in order, after any delay and just
	// before it is forwarded. A fresh function per link lets it follow a
	// protocol's framing across chunk boundaries. It runs on the link's own
	// goroutine, so it must be quick, and it must not keep b.
	Observe func() func(b []byte)
	// SlowOnly, if set, limits SetDelay to the chunks toward the target it
	// accepts (those naming one Redis key, say): the link is slow for one
	// command alone, every other passes at once.
	SlowOnly func(b []byte) bool
}

// Stats counts the connection attempts a proxy has seen.
type Stats struct {
	Conns   int64 // accepted while up: each got a link to the target
	Refused int64 // accepted while down, then reset at once
}

// Attempts is every connection attempt, linked or refused.
func (s Stats) Attempts() int64 { return s.Conns + s.Refused }

// Proxy forwards every connection it accepts to one target (host:port).
// Every goroutine it starts is stopped by Close.
type Proxy struct {
	ln      net.Listener
	target  string
	observe func() func([]byte)
	slowIf  func([]byte) bool
	stop    chan struct{} // closed by Close: cuts delays short
	wg      sync.WaitGroup
	delay   atomic.Int64 // nanoseconds added before each chunk sent upstream

	conns   atomic.Int64
	refused atomic.Int64

	mu     sync.Mutex // guards down, closed and live
	down   bool
	closed bool
	live   map[net.Conn]struct{} // both ends of every open link
}

// New listens on 127.0.0.1:0 and forwards every connection to target
// (host:port) until Close.
func New(target string, opts Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln: ln, target: target, observe: opts.Observe, slowIf: opts.SlowOnly,
		stop: make(chan struct{}), live: map[net.Conn]struct{}{},
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port, to put in the app's URL instead of the
// target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay delays every chunk forwarded upstream (toward the target) by d,
// so each request and answer round trip costs about d more.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetDown with true cuts every open link and refuses new connections (accepted,
// then reset at once, as a host with nothing listening would);
// false forwards again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		p.cutLocked()
	}
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{Conns: p.conns.Load(), Refused: p.refused.Load()}
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

// track registers c as live and adds one goroutine to the wait group (under
// the lock, so Close cannot miss it), or resets c and returns false when
// the proxy is down or closed.
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

// link dials the target for one client and copies both ways until either
// side ends; closing both ends then ends the other direction too.
func (p *Proxy) link(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	upstream, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil || !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	go func() {
		defer p.wg.Done()
		p.copy(client, upstream, false, nil)
		_ = client.Close()
	}()
	var observe func([]byte)
	if p.observe != nil {
		observe = p.observe()
	}
	p.copy(upstream, client, true, observe)
	_ = upstream.Close()
}

// copy forwards src to dst until either fails. Upstream (toward the
// target), each chunk waits for the current delay first, then is shown to
// observe.
func (p *Proxy) copy(dst, src net.Conn, upstream bool, observe func([]byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && upstream {
			if (p.slowIf == nil || p.slowIf(buf[:n])) && !p.sleep() {
				return
			}
			if observe != nil {
				observe(buf[:n])
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
