package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A load on a cold key is one query; on a link with latency L it should cost
// L, not 2L or 3L. pgx spends extra round trips in two places by default:
// it pings every connection idle for more than a second before handing it
// out, and it prepares each statement on a connection the first time that
// connection runs it. Both land on exactly the requests that hurt most, the
// first ones after a quiet spell, when a hot key has just expired.

// pingIdleAfter is how long a connection may sit idle before it is pinged
// (one round trip) rather than only checked locally.
const pingIdleAfter = time.Minute

// shouldPing replaces pgxpool's "ping whatever was idle more than a second".
// A connection idle for less than pingIdleAfter is checked without a round
// trip (CheckConn: a read with a 1 ms deadline), which catches what a
// database restart or pg_terminate_backend leaves behind, a connection the
// server closed. Only one idle for longer, which a silent network path may
// have lost, is pinged.
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	switch {
	case p.IdleDuration <= time.Second:
		return false
	case p.IdleDuration > pingIdleAfter:
		return true
	}
	// A closed connection fails the check and is closed by it; the ping
	// then fails at once and pgxpool hands out another connection. pgx
	// deprecates CheckConn in favour of Ping "unless on a high latency
	// connection", which is the case this exists for; a path that drops
	// writes silently is what the ping after pingIdleAfter is for.
	//lint:ignore SA1019 see above: a round trip per acquire is what this avoids
	return p.Conn.PgConn().CheckConn() != nil
}

// prepareOnConnect prepares statements on every new connection (named by
// their SQL, which is how pgx finds them again at Query), so their first
// use on it costs one round trip, in the connection's own start-up rather
// than in a request. A statement the server rejects (its table does not
// exist before the migrations ran) is left to be prepared at first use, as
// without this; only a broken connection fails the connect.
func prepareOnConnect(statements []string) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		for _, sql := range statements {
			var pgErr *pgconn.PgError
			_, err := conn.Prepare(ctx, sql, sql)
			switch {
			case err == nil:
			case conn.IsClosed(): // a FATAL error: the connection is gone
				return fmt.Errorf("prepare %q: %w", sql, err)
			case !errors.As(err, &pgErr):
				return fmt.Errorf("prepare %q: %w", sql, err)
			}
		}
		return nil
	}
}

// planChanged is the SQLSTATE of "cached plan must not change result type":
// a migration changed a column's type under a statement prepared before it.
const planChanged = "0A000"

// dropIfPlanChanged closes a connection whose prepared statement outlived a
// schema change, so the pool replaces it (and the replacement prepares the
// new shape) instead of failing every later use of it. pgx invalidates its
// own statement cache on this error, but not a statement prepared by name:
// without this, the failure would last as long as the connection.
func dropIfPlanChanged(conn *pgxpool.Conn, err error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == planChanged {
		_ = conn.Conn().Close(context.Background()) // Release then destroys it
	}
}
