package db

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// addFallback appends the servers of fallbackURL to the ones pc connects
// to, so a new connection goes to them only once every server of pc's own
// URL refused it. pgx tries the hosts in order on every connect: while the
// first answers, the fallback takes no load; once it is gone, each new
// connection (the breaker's probe first) lands on the fallback without a
// restart. A connection made on the fallback stays there until it idles
// out (IdleTimeout) or breaks, which is how the pool drifts back.
//
// The switch is not silent: the returned watch sees every connect's dial
// and calls onSwitch when the pool's new connections move to the fallback
// or back (nil when fallbackURL is empty).
func addFallback(pc *pgxpool.Config, fallbackURL string, onSwitch func(on bool, addr string)) (*fallbackWatch, error) {
	if fallbackURL == "" {
		return nil, nil
	}
	fb, err := pgconn.ParseConfig(fallbackURL)
	if err != nil {
		return nil, fmt.Errorf("parse fallback url: %w", err)
	}
	cc := &pc.ConnConfig.Config
	// A server pc already tries is not tried twice (DATABASE_READ_URL may
	// name the primary too). sslmode=prefer lists each host twice (TLS,
	// then plain): both copies of a new host are kept.
	own := map[string]bool{cc.Host + ":" + fmt.Sprint(cc.Port): true}
	for _, f := range cc.Fallbacks {
		own[f.Host+":"+fmt.Sprint(f.Port)] = true
	}
	w := &fallbackWatch{addrs: map[string]bool{}, onSwitch: onSwitch}
	hosts := append([]*pgconn.FallbackConfig{{Host: fb.Host, Port: fb.Port, TLSConfig: fb.TLSConfig}}, fb.Fallbacks...)
	for _, h := range hosts {
		if !own[h.Host+":"+fmt.Sprint(h.Port)] {
			cc.Fallbacks = append(cc.Fallbacks, h)
			_, addr := pgconn.NetworkAddress(h.Host, h.Port)
			w.addrs[addr] = true
		}
	}
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			w.dialled(addr)
		}
		return conn, err
	}
	return w, nil
}

// fallbackWatch knows whether the pool's latest connection went to a
// fallback server. pgx dials a pool's hosts in order, so a dial that
// reaches a fallback means every own server refused just before it.
type fallbackWatch struct {
	addrs    map[string]bool // the fallback servers' dial addresses; read-only
	on       atomic.Bool
	onSwitch func(on bool, addr string)
}

// dialled records a successful dial of addr, reporting a move between the
// pool's own servers and its fallback.
func (w *fallbackWatch) dialled(addr string) {
	on := w.addrs[addr]
	if w.on.Swap(on) != on && w.onSwitch != nil {
		w.onSwitch(on, addr)
	}
}

// onFallback reports whether the latest connection went to a fallback.
func (w *fallbackWatch) onFallback() bool { return w != nil && w.on.Load() }
