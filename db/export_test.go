package db

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Acquire exposes the acquire step of With to the tests of its errors and
// of Waiting, which hold connections outside any fn. Outside tests the
// only way to a connection is With, behind the breaker and the gate.
func (p *Pool) Acquire(ctx context.Context) (*pgxpool.Conn, error) { return p.acquire(ctx) }

// Reset closes every connection the pool keeps, so that the next statement
// must dial.
func (p *Pool) Reset() { p.pool.Reset() }

// Occupy takes every slot of the gate, as callers holding all connections
// would, without touching the database (a test with the link cut cannot
// hold real ones); the returned func hands them back.
func (p *Pool) Occupy() (release func()) {
	p.gate.mu.Lock()
	n := p.gate.free
	p.gate.free = 0
	p.gate.mu.Unlock()
	return func() {
		for range n {
			p.gate.release()
		}
	}
}
