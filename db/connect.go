package db

// A session's own time limits, and reaching the server at start: how long a
// connect, a wait for a row lock and the start's attempts may take, each
// chosen so that what ends is counted as the request's failure or the
// database's, whichever it is.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lockTimeout is the lock_timeout of a pool's sessions: a wait for a row
// lock (a long transaction holding a product, a flash sale queueing on
// one) ends before statement_timeout would, as lock_not_available
// (55P03): the request's failure (503, nothing written), not the
// database's. Ended by statement_timeout it read as a server too slow to
// answer, and one transaction holding one row opened the breaker, which
// then refused every order on the instance.
//
// PostgreSQL applies lock_timeout to each lock a statement waits for, and
// the second writer of a held row waits twice: for the row's lock queue
// (the first writer holds its tuple lock) and then for the row. At 9/10
// of the statement timeout the second wait ran into statement_timeout, so
// two writers of one held row (two places per row, db.Pool.WithKey, or
// two instances) counted as an outage, and five such opened the breaker.
// Under half, both waits end first.
func lockTimeout(statement time.Duration) time.Duration {
	return max(statement*9/20, time.Millisecond)
}

// minConnectTimeout is the least time one connect gets, whatever the
// acquire budget: a TCP handshake and PostgreSQL's start-up (a backend
// forked, authentication, parameters) take milliseconds on a loaded host.
// With DB_ACQUIRE_TIMEOUT=10ms the connect had 7.5 ms: none finished, the
// app could not start, and a running pool could never have grown.
const minConnectTimeout = 250 * time.Millisecond

// connectTimeout is 3/4 of the acquire timeout, so that a connect to a
// frozen server ends as a connect error (an outage the breaker counts)
// before the caller's acquire ends it, but never less than
// minConnectTimeout. Below that (an acquire timeout under 333 ms) a
// caller's acquire may end first: it answers 503 at its own deadline and
// the connect goes on in the background (pgxpool does not cancel it) to
// join the pool.
func connectTimeout(acquire time.Duration) time.Duration {
	return max(acquire*3/4, minConnectTimeout)
}

// pingAttempts bounds how often Open tries to reach the server: 1.5 s of
// backoff between five attempts (100 ms doubling), enough for a server that
// is still starting or a machine too loaded to finish a handshake within
// the connect timeout.
const pingAttempts = 5

// maxPingBackoff caps the wait between attempts of an Open that waits for
// its server (Config.WaitForServer).
const maxPingBackoff = 5 * time.Second

// ping checks that the database answers. It retries only outages (refused or
// timed-out connects, a server starting up); a wrong password or database
// name fails at once, since waiting cannot fix it.
func ping(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Room for a connect even when the acquire timeout is shorter.
		pingCtx, cancel := context.WithTimeout(ctx, max(cfg.AcquireTimeout, connectTimeout(cfg.AcquireTimeout))+cfg.StatementTimeout)
		err := pool.Ping(pingCtx)
		cancel()
		if err == nil || !isOutage(err) {
			return err
		}
		if isMisconfigured(err) {
			return poolerHint(err)
		}
		if attempt >= pingAttempts {
			if cfg.WaitForServer == nil {
				return err
			}
			cfg.WaitForServer(attempt, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxPingBackoff)
	}
}

// isMisconfigured reports a server refusing us by name (class 28, a wrong
// user or password; class 3D, no such database) or refusing the URL's
// session settings (42704 "unrecognized configuration parameter" for
// ?bogus_param=1, 22023 for an invalid value, 42501 for one this user may
// not set, 55P02 for one only a restart sets, all FATAL at connect), or a certificate that does not verify:
// an outage for a running service, but at start a mistake in the settings
// that waiting cannot fix. The settings' refusals waited forever, logged
// as "database not reachable yet".
func isMisconfigured(err error) bool {
	code := pgCode(err)
	var pgErr *pgconn.PgError
	settings := errors.As(err, &pgErr) && pgErr.Severity == "FATAL" && (code == "42704" || code == "22023" || code == "42501" || code == "55P02")
	return len(code) == 5 && (code[:2] == "28" || code[:2] == "3D") || settings || unsupportedStartup(err) || untrustedCertificate(err)
}

// untrustedCertificate is a TLS handshake the server's certificate failed
// (sslmode=verify-ca or verify-full with a root it does not chain to, or
// another host name).
func untrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// unsupportedStartup is PgBouncer refusing the pool's start-up settings
// ("unsupported startup parameter: statement_timeout"): a URL that points
// at PgBouncer without DB_POOLER, which waiting cannot fix either.
func unsupportedStartup(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "08P01" && strings.Contains(pgErr.Message, "unsupported startup parameter")
}

// poolerHint names the fix of an unsupportedStartup error.
func poolerHint(err error) error {
	if !unsupportedStartup(err) {
		return err
	}
	return fmt.Errorf("the server refuses this pool's session settings, as PgBouncer does: behind PgBouncer set DB_POOLER=pgbouncer "+
		"(and point DATABASE_DIRECT_URL at PostgreSQL itself): %w", err)
}
