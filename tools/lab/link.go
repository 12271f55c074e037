package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Link is a controllable TCP link between the instances and PostgreSQL or
// Redis (netproxy, see linkproc.go), run by the lab binary in a process of
// its own. In the lab's process, a chunk the app sent waited for the
// proxy's goroutine behind the load generator's thousands: a cold-key
// query the app sent 3 ms into the burst was read by the proxy at 76 ms,
// and only then began its 300 ms delay, so the lab timed its own scheduler
// as the database's. A process of its own is woken by the kernel as soon as
// the bytes arrive.
type Link struct {
	addr string // host:port the app dials instead of the target
	ctl  string // base URL of the link process's control endpoint
	hc   *http.Client
	cmd  *exec.Cmd
	in   io.WriteCloser // closing it ends the link process

	mu  sync.Mutex
	err error // the first failed control call since Err was last read
}

// ProxyStats is a snapshot of a link's counters.
type ProxyStats struct {
	Conns    int64 `json:"conns"`
	Refused  int64 `json:"refused"`
	Executes int64 `json:"executes"` // PostgreSQL Execute messages forwarded upstream
	// LastExecute is when the latest Execute was forwarded upstream, after
	// the link's delay (Unix ns; 0 before the first): it dates a query.
	LastExecute int64 `json:"last_execute_unix_ns,omitempty"`
}

// Attempts is every connection attempt, forwarded or refused.
func (s ProxyStats) Attempts() int64 { return s.Conns + s.Refused }

// Sub is the difference of two snapshots: what happened in between.
func (s ProxyStats) Sub(o ProxyStats) ProxyStats {
	return ProxyStats{Conns: s.Conns - o.Conns, Refused: s.Refused - o.Refused, Executes: s.Executes - o.Executes,
		LastExecute: s.LastExecute}
}

// NewLink starts a link process forwarding to target. With pg set, it
// counts the PostgreSQL Execute messages going upstream.
func NewLink(target string, pg bool) (*Link, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self) // #nosec G204 -- the lab re-runs itself
	cmd.Env = append(os.Environ(), linkEnv+"="+target, linkPGEnv+"="+strconv.FormatBool(pg))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &Link{cmd: cmd, in: in, hc: &http.Client{Timeout: 10 * time.Second}}
	var hello linkHello
	decoded := make(chan error, 1)
	go func() { decoded <- json.NewDecoder(bufio.NewReader(out)).Decode(&hello) }()
	select {
	case err = <-decoded:
	case <-time.After(10 * time.Second):
		err = errors.New("no hello within 10 s")
	}
	if err != nil {
		l.Close() // kills it if need be; the decoder then sees EOF
		return nil, fmt.Errorf("link to %s: starting its process: %w", target, err)
	}
	l.addr, l.ctl = hello.Addr, "http://"+hello.Control
	return l, nil
}

// Addr is the link's host:port, to put in the app's URL instead of the
// target's.
func (l *Link) Addr() string { return l.addr }

// SetDelay delays every chunk forwarded upstream by d, so each request and
// answer round trip costs about d more.
func (l *Link) SetDelay(d time.Duration) { l.set("delay", d.String()) }

// SetDown with true cuts every open link and refuses new connections; false
// forwards again.
func (l *Link) SetDown(down bool) { l.set("down", strconv.FormatBool(down)) }

// Reset puts the link back to a fast, working one.
func (l *Link) Reset() {
	l.SetDelay(0)
	l.SetDown(false)
}

// Stats returns the counters so far (zero, and an error for Err, if the
// link process does not answer).
func (l *Link) Stats() ProxyStats {
	var s ProxyStats
	resp, err := l.hc.Get(l.ctl + "/stats")
	if err == nil {
		err = decodeControl(resp, &s)
	}
	l.fail(err)
	return s
}

// Err returns, and forgets, the first control call that failed since the
// last Err: an experiment whose link did not do as told has no result.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	l.err = nil
	return err
}

// Close ends the link process and waits for it.
func (l *Link) Close() {
	_ = l.in.Close()
	done := make(chan struct{})
	go func() { _ = l.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = l.cmd.Process.Kill()
		<-done
	}
}

func (l *Link) set(name, value string) {
	resp, err := l.hc.PostForm(l.ctl+"/"+name, url.Values{"v": {value}})
	if err == nil {
		err = decodeControl(resp, nil)
	}
	l.fail(err)
}

func (l *Link) fail(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = fmt.Errorf("link %s: %w", l.addr, err)
	}
}

// decodeControl reads a control answer into v (nil: expect no body).
func decodeControl(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("control: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
