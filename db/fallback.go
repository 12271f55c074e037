package db

import (
	"fmt"

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
func addFallback(pc *pgxpool.Config, fallbackURL string) error {
	if fallbackURL == "" {
		return nil
	}
	fb, err := pgconn.ParseConfig(fallbackURL)
	if err != nil {
		return fmt.Errorf("parse fallback url: %w", err)
	}
	cc := &pc.ConnConfig.Config
	// A server pc already tries is not tried twice (DATABASE_READ_URL may
	// name the primary too). sslmode=prefer lists each host twice (TLS,
	// then plain): both copies of a new host are kept.
	own := map[string]bool{cc.Host + ":" + fmt.Sprint(cc.Port): true}
	for _, f := range cc.Fallbacks {
		own[f.Host+":"+fmt.Sprint(f.Port)] = true
	}
	hosts := append([]*pgconn.FallbackConfig{{Host: fb.Host, Port: fb.Port, TLSConfig: fb.TLSConfig}}, fb.Fallbacks...)
	for _, h := range hosts {
		if !own[h.Host+":"+fmt.Sprint(h.Port)] {
			cc.Fallbacks = append(cc.Fallbacks, h)
		}
	}
	return nil
}
