package main

import (
	"sync/atomic"

	"github.com/stampede-guard/api/netproxy"
)

// Link is a netproxy.Proxy between the instances and PostgreSQL or Redis
// that also counts, for PostgreSQL, the Execute messages going upstream
// (one per extended-protocol query), so a phase of an experiment can be
// measured on the wire while PostgreSQL's own counters are read at the end.
type Link struct {
	*netproxy.Proxy
	executes atomic.Int64 // PostgreSQL Execute messages forwarded upstream
}

// ProxyStats is a snapshot of a link's counters.
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

// NewLink starts a proxy to target. With pg set, it counts the PostgreSQL
// Execute messages going upstream.
func NewLink(target string, pg bool) (*Link, error) {
	l := &Link{}
	var opts netproxy.Options
	if pg {
		opts.Observe = netproxy.CountPGExecutes(&l.executes)
	}
	p, err := netproxy.New(target, opts)
	if err != nil {
		return nil, err
	}
	l.Proxy = p
	return l, nil
}

// Stats returns the counters so far.
func (l *Link) Stats() ProxyStats {
	s := l.Proxy.Stats()
	return ProxyStats{Conns: s.Conns, Refused: s.Refused, Executes: l.executes.Load()}
}

// Reset puts the link back to a fast, working one.
func (l *Link) Reset() {
	l.SetDelay(0)
	l.SetDown(false)
}
