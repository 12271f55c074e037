// Package db opens the PostgreSQL pools and guards the database from the
// application: every pool is bounded, every connection acquire has a deadline
// (a request that cannot get a connection fails fast with ErrAcquireTimeout
// instead of queueing), and every statement carries a server-side
// statement_timeout, so no query outlives the lock that protects it.
package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-guard/api/internal/breaker"
)

// ErrAcquireTimeout reports that no connection became free within the pool's
// acquire timeout: the pool is saturated, so the caller should shed the work.
var ErrAcquireTimeout = errors.New("db: timed out waiting for a connection")

// Config sizes one pool. Zero values take the documented defaults.
type Config struct {
	URL string
	// FallbackURL's servers are tried after URL's when none of those
	// answers (fallback.go): a reports pool on a replica falls back to the
	// primary. Only its hosts are taken; URL's user, database and
	// target_session_attrs apply to them. Empty: none.
	FallbackURL string
	// OnFallback is called when the pool's new connections move to
	// FallbackURL's servers (on, with the server's address) or back to
	// URL's; nil: the move shows only in Pool.OnFallback.
	OnFallback       func(on bool, addr string)
	Name             string        // label in errors and stats; default "main"
	MaxConns         int32         // default 10
	AcquireTimeout   time.Duration // default 2 seconds
	IdleTimeout      time.Duration // default 30 seconds
	StatementTimeout time.Duration // server-side, per statement; default 3 seconds
	// Breaker tunes the pool's circuit breaker (failures, open schedule,
	// state-change hook). Name defaults to "postgres_<Name>", the probe
	// timeout to AcquireTimeout; Probe and the error classifiers are set
	// by the pool.
	Breaker breaker.Config
	Pooler  Pooler // PgBouncer in front (pooler.go); default none
	// ReservedCritical > 0 puts Critical work (checkout) ahead of every
	// queued read: reads may use the reserved connections while no
	// Critical caller waits, and one that finds every connection busy
	// gets the next handed back. Default 0: Critical queues with reads.
	ReservedCritical int
	// Admission is what refuses a caller at the door (admission.go):
	// AdmitDeadline also one whose predicted queue wait does not fit its
	// share of its remaining deadline. Default AdmitQueue: only
	// the queue cap of the caller's Class refuses.
	Admission Admission
	// Tracer sees every query (e.g. OpenTelemetry spans); nil: none.
	Tracer pgx.QueryTracer
	// WaitForServer makes Open wait, past its first attempts (about 3 s),
	// for a server that does not answer (refused, unreachable, timing out)
	// until ctx ends, calling it before each further attempt; nil: Open
	// gives up then. A server that answers and refuses the settings (a
	// wrong password, no such database) fails Open at once either way.
	WaitForServer func(attempt int, err error)
	// Prepare lists statements prepared on every new connection (warm.go),
	// so a cold key's load is one round trip. Ignored behind a pooler in
	// transaction mode, where a connection is not one server session.
	Prepare []string
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "main"
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 10
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = 2 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = 3 * time.Second
	}
	return c
}

// Pool is a bounded pgxpool that counts the callers waiting for a connection,
// which pgxpool itself does not expose, so load shedding can refuse work
// before it joins a queue that cannot drain in time. The pgxpool is not
// exposed: every statement runs through With (guard.go), behind the breaker
// and the admission gate; the few things that must not pass them have
// narrow methods of their own (Ping, Stat, Close; migrations in migrate.go).
type Pool struct {
	pool      *pgxpool.Pool
	cfg       Config
	breaker   *breaker.Breaker
	waiting   atomic.Int64
	holdNanos atomic.Int64   // moving average of how long a connection is held
	timeouts  atomic.Int64   // statements cancelled by statement_timeout
	shed      atomic.Int64   // calls refused because the queue was too long
	tripped   atomic.Int64   // calls refused because the breaker was open
	gate      *gate          // admission in front of the connections (admission.go)
	fallback  *fallbackWatch // nil without Config.FallbackURL
	keys      keySlots       // per-key places in front of the pool (WithKey)
	// lockTimeout is the sessions' lock_timeout: the pool's own, or behind a
	// pooler the server's (0: none), read at start.
	lockTimeout time.Duration
}

// Open creates the pool and checks that the database answers.
func Open(ctx context.Context, cfg Config) (*Pool, error) {
	cfg = cfg.withDefaults()
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("db %s: parse url: %w", cfg.Name, err)
	}
	fallback, err := addFallback(pc, cfg.FallbackURL, cfg.OnFallback)
	if err != nil {
		return nil, fmt.Errorf("db %s: %w", cfg.Name, err)
	}
	pc.MaxConns = cfg.MaxConns
	pc.ConnConfig.ConnectTimeout = connectTimeout(cfg.AcquireTimeout)
	pc.MaxConnIdleTime = cfg.IdleTimeout
	// Set at connection start-up, so it holds for every statement on every
	// connection, including ones a future caller forgets to bound.
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt((2 * cfg.StatementTimeout).Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(lockTimeout(cfg.StatementTimeout).Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["application_name"] = "stampede-guard/" + cfg.Name
	applyPooler(pc, cfg.Pooler)
	pc.ShouldPing = shouldPing
	if len(cfg.Prepare) > 0 && !cfg.Pooler.Behind() {
		pc.AfterConnect = prepareOnConnect(cfg.Prepare)
	}
	if cfg.Tracer != nil {
		pc.ConnConfig.Tracer = cfg.Tracer
	}

	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("db %s: open: %w", cfg.Name, err)
	}
	// NewWithConfig does not connect; ping so a wrong URL fails the start.
	if err := ping(ctx, pool, cfg); err != nil {
		pool.Close()
		return nil, fmt.Errorf("db %s: ping: %w", cfg.Name, err)
	}
	serverLock := lockTimeout(cfg.StatementTimeout)
	if cfg.Pooler.Behind() {
		if serverLock, err = checkPooled(ctx, pool, cfg.Pooler); err != nil {
			pool.Close()
			return nil, fmt.Errorf("db %s: %w", cfg.Name, err)
		}
	}
	p := &Pool{pool: pool, cfg: cfg, gate: newGate(int(cfg.MaxConns), cfg.ReservedCritical), fallback: fallback, lockTimeout: serverLock}
	p.breaker = newBreaker(p)
	return p, nil
}

// LockTimeout is how long a statement of this pool waits for a row lock
// before it fails as lock_not_available: the pool's own lock_timeout, or
// behind a pooler the server's, 0 when the server sets none (then a wait
// for a held row ends at statement_timeout, which the breaker counts as
// an outage).
func (p *Pool) LockTimeout() time.Duration { return p.lockTimeout }

// Name is the pool's label ("main", "reports").
func (p *Pool) Name() string { return p.cfg.Name }

// Waiting is the number of callers currently waiting for a connection
// that another caller holds: the gate's queue, and callers past the gate
// that the pool keeps waiting. A caller whose connection is being dialled
// is left out: the pool dials one connection for each acquire that finds
// none idle and room for one, and that caller waits for the network, not
// in the queue SHED_MAX_WAITING bounds; the gate counted it on one of the
// pool's places. (Counting it made a cold pool's queue read one over its
// cap.) Dials show as the "constructing" connections.
func (p *Pool) Waiting() int64 {
	n := p.waiting.Load()
	if n > 0 { // Stat takes the pool's lock: only when someone waits
		n = max(0, n-int64(p.pool.Stat().ConstructingConns()))
	}
	return n + int64(p.gate.queued())
}

// Queued is the queue a class's cap bounds: the callers waiting at the
// gate for one of the pool's places. It is what a door in front of the
// pool compares with the cap (middleware.Shed), not Waiting: callers the
// gate has admitted spend an instant in pgxpool's acquire taking their
// connection, and Waiting counts them there, so a door reading it at a
// small cap refused requests while connections were free (with four
// callers on four connections, a few checks in 2 000 on an idle machine,
// one in 12 beside a busy test run).
func (p *Pool) Queued() int64 { return int64(p.gate.queued()) }

// OnFallback reports whether the pool's latest new connection went to a
// Config.FallbackURL server: the reports pool answering from the primary
// because its replica is gone.
func (p *Pool) OnFallback() bool { return p.fallback.onFallback() }

// Breaker is the state of the pool's circuit breaker.
func (p *Pool) Breaker() breaker.Snapshot { return p.breaker.Snapshot() }

// Close stops the breaker's probes, then closes the pool.
func (p *Pool) Close() {
	p.breaker.Close()
	p.pool.Close()
}

// StatementTimeouts counts statements the server cancelled for running past
// statement_timeout.
func (p *Pool) StatementTimeouts() int64 { return p.timeouts.Load() }

// Refused counts calls refused without touching the database: shed (queue
// too long for the caller's priority) and tripped (breaker open).
func (p *Pool) Refused() (shed, tripped int64) { return p.shed.Load(), p.tripped.Load() }
