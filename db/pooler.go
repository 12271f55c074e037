package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pooler names what stands between the pools and PostgreSQL (DB_POOLER).
type Pooler string

const (
	// PoolerNone: the pools talk to PostgreSQL itself.
	PoolerNone Pooler = "none"
	// PoolerPgBouncer: PgBouncer in transaction pooling. Consecutive
	// statements of one client may run on different server connections, so
	// nothing may outlive a transaction: no named prepared statements
	// (pgx's default statement cache, and its describe round trip, which
	// may reach another server than the execute), no session SET, no
	// session advisory lock. Queries use pgx's exec mode: one round trip,
	// unnamed statement, parameters typed from their Go values.
	PoolerPgBouncer Pooler = "pgbouncer"
	// PoolerPgBouncerPrepared: PgBouncer ≥ 1.21 with max_prepared_statements
	// > 0, which tracks protocol-level prepared statements per server
	// connection, so pgx's statement cache is safe again (and saves the
	// parse of every query).
	PoolerPgBouncerPrepared Pooler = "pgbouncer-prepared"
)

// parsePooler validates a DB_POOLER value; empty means none.
func parsePooler(s string) (Pooler, error) {
	switch p := Pooler(s); p {
	case "":
		return PoolerNone, nil
	case PoolerNone, PoolerPgBouncer, PoolerPgBouncerPrepared:
		return p, nil
	}
	return "", fmt.Errorf("unknown pooler %q (want none, pgbouncer or pgbouncer-prepared)", s)
}

// Behind reports whether a transaction-pooling pooler is in front.
func (p Pooler) Behind() bool { return p == PoolerPgBouncer || p == PoolerPgBouncerPrepared }

// applyPooler adapts a pool's configuration to the pooler. PgBouncer
// refuses start-up parameters it does not track ("unsupported startup
// parameter: statement_timeout"), and would not carry them to the server
// connection a transaction lands on anyway: the timeouts must be set on the
// server side (ALTER ROLE/DATABASE … SET statement_timeout, or the
// database's connect_query in pgbouncer.ini), which checkServerTimeout
// verifies at start.
func applyPooler(pc *pgxpool.Config, p Pooler) {
	switch p {
	case PoolerPgBouncer:
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	case PoolerPgBouncerPrepared:
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	default:
		return
	}
	delete(pc.ConnConfig.RuntimeParams, "statement_timeout")
	delete(pc.ConnConfig.RuntimeParams, "idle_in_transaction_session_timeout")
	delete(pc.ConnConfig.RuntimeParams, "lock_timeout")
}

// checkPooled verifies at start what a transaction pooler leaves to the
// server: a statement_timeout (refused without one), prepared statements
// tracked by the pooler when the statement cache is on
// (PoolerPgBouncerPrepared), and the server's lock_timeout, returned (0:
// none) for the caller to warn about.
func checkPooled(ctx context.Context, pool *pgxpool.Pool, p Pooler) (lock time.Duration, err error) {
	if _, err := checkServerTimeout(ctx, pool); err != nil {
		return 0, preparedHint(p, err)
	}
	if p == PoolerPgBouncerPrepared {
		if err := checkPreparedStatements(ctx, pool); err != nil {
			return 0, err
		}
	}
	return showDuration(ctx, pool, "lock_timeout")
}

// checkPreparedStatements has two of the pool's sessions run one query as
// pgx's statement cache runs it: a named prepared statement whose name
// comes from the query, the same in every session. A pooler that does not
// track prepared statements (PgBouncer before 1.21, or with
// max_prepared_statements = 0) hands the second session the server
// connection the first left its statement on, and the prepare fails with
// 42P05 "already exists": at start here, rather than as a 500 on requests.
func checkPreparedStatements(ctx context.Context, pool *pgxpool.Pool) error {
	conns := make([]*pgxpool.Conn, 0, 2)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range 2 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("prepared statements check: %w", err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		var one int
		if err := c.QueryRow(ctx, "SELECT 1 /* stampede-guard: prepared statements through the pooler */").Scan(&one); err != nil {
			return preparedHint(PoolerPgBouncerPrepared, fmt.Errorf("prepared statements check: %w", err))
		}
	}
	return nil
}

// preparedHint names the fix when err is a prepared statement found on the
// wrong server connection (42P05 already exists, 26000 does not exist)
// with the statement cache on behind the pooler.
func preparedHint(p Pooler, err error) error {
	if code := pgCode(err); p != PoolerPgBouncerPrepared || code != "42P05" && code != "26000" {
		return err
	}
	return fmt.Errorf("DB_POOLER=pgbouncer-prepared, but the pooler does not keep prepared statements apart "+
		"(PgBouncer before 1.21, or max_prepared_statements = 0): set max_prepared_statements > 0, or DB_POOLER=pgbouncer: %w", err)
}

// showDuration reads a duration setting of the server (SHOW name).
func showDuration(ctx context.Context, pool *pgxpool.Pool, name string) (time.Duration, error) {
	var s string
	if err := pool.QueryRow(ctx, "SHOW "+name).Scan(&s); err != nil {
		return 0, fmt.Errorf("show %s: %w", name, err)
	}
	return parsePGDuration(name, s)
}

// checkServerTimeout refuses a pooled database without a statement_timeout
// (no query would ever be cut off) and returns the server's value.
func checkServerTimeout(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	d, err := showDuration(ctx, pool, "statement_timeout")
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("behind a pooler PostgreSQL has no statement_timeout: PgBouncer does not pass the pool's own, so set it on the server " +
			"(ALTER ROLE <user> SET statement_timeout = '3s', or connect_query in pgbouncer.ini)")
	}
	return d, nil
}

// parsePGDuration reads a duration as SHOW prints it: "0", "250ms", "3s",
// "1min", "2h", "1d"; a bare number is milliseconds.
func parsePGDuration(name, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, "ms"
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[unit]
	if err != nil || !ok {
		return 0, fmt.Errorf("%s %q: not a PostgreSQL duration", name, s)
	}
	return time.Duration(v * float64(u)), nil
}
