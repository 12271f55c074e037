package dbtest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP link that a test controls, placed between the application
// and one of its dependencies (PostgreSQL, Redis). Pointing the app's URL at
// the proxy lets a test make the dependency unreachable (SetDown) or slow
// (SetDelay) and bring it back, without stopping the shared real service and
// without any hook inside the application: the app sees exactly what a
// network partition or a congested link would show it.
type Proxy struct {
	ln     net.Listener
	target string
	stop   chan struct{} // closed by Close: cuts delays short
	wg     sync.WaitGroup
	delay  atomic.Int64 // nanoseconds

	mu     sync.Mutex // guards the fields below
	down   bool
	closed bool
	conns  map[net.Conn]struct{} // both ends of every live link
}

// NewProxy listens on 127.0.0.1:0 and forwards every connection to target
// (host:port). It is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dbtest: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, stop: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port, to put in the app's URL instead of target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDown(true) cuts every current connection and refuses new ones (accepted,
// then closed at once); SetDown(false) forwards again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		p.cutLocked()
	}
}

// SetDelay delays every chunk forwarded upstream (toward target) by d.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops listening, cuts every connection and waits for every goroutine
// the proxy started. Safe to call more than once.
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
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// track registers c as live and adds one goroutine to the wait group (under
// the lock, so Close cannot miss it), or closes c and returns false when the
// proxy is down or closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
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
			go p.link(client)
		}
	}
}

// link dials target for one client and copies both ways until either side
// ends, then closes both ends, which ends the other direction too.
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
		p.copy(client, upstream, false)
		_ = client.Close()
	}()
	p.copy(upstream, client, true)
	_ = upstream.Close()
}

// copy forwards src to dst until either fails; when delayed (the upstream
// direction), each chunk waits for the current delay first.
func (p *Proxy) copy(dst, src net.Conn, delayed bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && delayed && !p.sleep() {
			return
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
