package db

import (
	"context"
	"fmt"
)

// Sizing is a fleet's connection budget. Pools only protect the database if
// every instance's pools together fit under its max_connections: 20 pods
// with 10 connections each ask for 200 from a server that allows 100, and
// the pods that connect last fail at the worst moment (a deploy, a scale-up
// under load) with "too many clients".
type Sizing struct {
	Instances   int // how many instances share the database (EXPECTED_INSTANCES)
	PerInstance int // one instance's pools together (main + reports max conns)
	// Headroom is what must stay free for people and tools: psql, a
	// migration's own connection, cron jobs, a replica's slot.
	Headroom int
}

// SizingReport is the budget against the server's limits.
type SizingReport struct {
	Sizing
	MaxConnections int // the server's max_connections
	// Reserved are the slots ordinary roles cannot use:
	// superuser_reserved_connections plus reserved_connections (PG 16+).
	Reserved int
}

// Usable is what ordinary roles may open.
func (r SizingReport) Usable() int { return r.MaxConnections - r.Reserved }

// Needed is what the fleet's pools can open at full load.
func (r SizingReport) Needed() int { return r.Instances * r.PerInstance }

// OK reports whether the fleet fits and leaves the headroom free.
func (r SizingReport) OK() bool { return r.Needed()+r.Headroom <= r.Usable() }

// String is the formula with this server's numbers, for the start-up log.
func (r SizingReport) String() string {
	return fmt.Sprintf("%d instances × %d connections = %d; + headroom %d = %d; usable = max_connections %d − reserved %d = %d",
		r.Instances, r.PerInstance, r.Needed(), r.Headroom, r.Needed()+r.Headroom,
		r.MaxConnections, r.Reserved, r.Usable())
}

// CheckSizing reads the server's connection limits and sets them against s.
// It only reads; what to do with a report that is not OK (warn or refuse to
// start) is the caller's policy.
func CheckSizing(ctx context.Context, pool *Pool, s Sizing) (SizingReport, error) {
	r := SizingReport{Sizing: s}
	// current_setting(..., true) is NULL where the setting does not exist
	// (reserved_connections before PostgreSQL 16).
	err := pool.With(ctx, func(conn Conn) error {
		return conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
			current_setting('superuser_reserved_connections')::int
			+ coalesce(current_setting('reserved_connections', true), '0')::int`,
		).Scan(&r.MaxConnections, &r.Reserved)
	})
	if err != nil {
		return r, fmt.Errorf("db %s: read connection limits: %w", pool.Name(), err)
	}
	return r, nil
}
