package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-guard/api/internal/breaker"
	"github.com/stampede-guard/api/internal/retryhint"
)

// Conn is what a guarded call may do with its connection: run statements,
// batches and transactions. It is narrower than *pgxpool.Conn on purpose:
// no Release (With releases it, after timing the hold) and no Hijack or
// underlying *pgx.Conn (a connection taken out of the pool would outlive
// the breaker and the gate that admitted it).
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Begin(ctx context.Context) (pgx.Tx, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

var _ Conn = (*pgxpool.Conn)(nil)

// hungMargin is how far past statement_timeout a call may run before the
// server counts as hung (network round trips, scheduling).
const hungMargin = 500 * time.Millisecond

// With runs fn on a connection and releases it after, through the circuit
// breaker: while the database is failing, calls are refused at once with a
// RefusedError instead of each waiting for its own timeout. fn runs under
// the caller's ctx, not the acquire deadline. It is the only way to run a
// statement on the pool.
func (p *Pool) With(ctx context.Context, fn func(Conn) error) error {
	err := p.breaker.Do(func() error {
		leave, err := p.admit(ctx)
		if err != nil {
			return err
		}
		defer leave()
		conn, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		defer func() {
			p.recordHold(time.Since(start))
			conn.Release()
		}()
		err = fn(conn)
		dropIfPlanChanged(conn, err)
		if errors.Is(err, context.DeadlineExceeded) && time.Since(start) > p.cfg.StatementTimeout+hungMargin {
			err = fmt.Errorf("%w: %w", ErrServerHung, err)
		}
		return err
	})
	var open *breaker.OpenError
	if errors.As(err, &open) {
		// Retry-After is the time to the next probe (the handler rounds it
		// up to at least 1 s): no sooner can a retry succeed.
		p.tripped.Add(1)
		return &RefusedError{Pool: p.cfg.Name, Reason: ErrCircuitOpen, RetryAfter: open.RetryAfter}
	}
	if IsStatementTimeout(err) {
		p.timeouts.Add(1)
	}
	return err
}

// admit passes the gate (admission.go): refused at once when the predicted
// wait does not fit the caller's deadline (or SHED_MAX_WAITING's cap),
// else queued, within the acquire timeout, in the gate's order.
func (p *Pool) admit(ctx context.Context) (func(), error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.AcquireTimeout)
	defer cancel()
	limit, hasMax := maxWaiting(ctx)
	leave, err := p.gate.enter(actx, p.holdTime(), entry{
		byDeadline: p.cfg.Admission == AdmitDeadline, maxWaiting: limit, hasMax: hasMax,
	})
	var refused *RefusedError
	switch {
	case err == nil:
		return leave, nil
	case errors.As(err, &refused):
		p.shed.Add(1)
		refused.Pool = p.cfg.Name
		refused.RetryAfter = max(time.Second, refused.RetryAfter)
		return nil, refused
	case ctx.Err() != nil:
		return nil, fmt.Errorf("db %s: %w", p.cfg.Name, err)
	}
	return nil, fmt.Errorf("db %s: %w after %s", p.cfg.Name,
		retryhint.New(ErrAcquireTimeout, p.DrainEstimate()), p.cfg.AcquireTimeout)
}

// acquire takes a connection, waiting at most the acquire timeout: the
// step of With after the gate. The wait is counted in Waiting. A saturated
// pool yields ErrAcquireTimeout; a caller whose own context ends yields its
// context error.
//
// It does not judge the caller's queue cap (Class) again: the gate has
// already given it one of the pool's MaxConns slots, so what it may wait
// for here is a dial or a readiness ping, not a queue. A second cap
// counting every caller in this step refused callers that held a slot
// whenever a few arrived together, and every caller under a cap of 0.
func (p *Pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)

	actx, cancel := context.WithTimeout(ctx, p.cfg.AcquireTimeout)
	defer cancel()
	conn, err := p.pool.Acquire(actx)
	if err == nil {
		return conn, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("db %s: acquire: %w", p.cfg.Name, ctx.Err())
	}
	if actx.Err() != nil && !isConnect(err) {
		// The queue that kept this request waiting says when to come back.
		return nil, fmt.Errorf("db %s: %w after %s", p.cfg.Name,
			retryhint.New(ErrAcquireTimeout, p.DrainEstimate()), p.cfg.AcquireTimeout)
	}
	return nil, fmt.Errorf("db %s: acquire: %w", p.cfg.Name, err)
}

// holdTime is the average time a connection is held (10 ms until known).
func (p *Pool) holdTime() time.Duration {
	if hold := time.Duration(p.holdNanos.Load()); hold > 0 {
		return hold
	}
	return 10 * time.Millisecond
}

// Ping asks the server whether it answers now, for readiness. It passes
// neither the breaker nor the gate on purpose: readiness reports the
// server's own health (the breaker's state is a check of its own), and a
// refusal by the gate would say the pool is busy, not that the server is
// down. It uses one of the pool's connections like any statement. The
// app calls it only while the breaker is closed, and at most about once a
// second whatever the probes (handlers.Health, app.unlessOpen).
func (p *Pool) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// Stat is pgxpool's own counters (connections acquired and idle, acquires
// and their wait), for metrics and the console: a read-only snapshot.
func (p *Pool) Stat() *pgxpool.Stat { return p.pool.Stat() }
