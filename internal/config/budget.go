package config

import (
	"fmt"
	"time"
)

// The time budget. Every timeout is a share of one request deadline
// (REQUEST_TIMEOUT), so that an inner timeout always fires before the one
// outside it and a user who changes one value never meets a refusal caused
// by a default they did not set:
//
//	DB_ACQUIRE_TIMEOUT   A  = 0.2 R        wait for a pool connection
//	DB_STATEMENT_TIMEOUT S  = 0.3 R        server-side query limit
//	shared load          L  = A + S        holder's load, from taking the lock
//	LOCK_TTL             T  = S + 0.1 R    > S: a live query never outlives its lock
//	LOCK_WAIT            W  = 0.9 R        ≥ T + L: a waiter outlives a dead holder
//	HTTP_WRITE_TIMEOUT   WT = R + max(R/2, 1 s)  > R: the server never cuts an answer
//	BODY_READ_TIMEOUT    B  = min(2 s, R/2) < R: a slow body leaves time to answer
//
// With R = 10 s: A 2 s, S 3 s, L 5 s, T 4 s, W 9 s, WT 15 s. A value that is
// set stays as set; an unset REQUEST_TIMEOUT grows so that the inner values
// that were set keep their share (A, S, T = 0.4 R, W, B = R/2), or shrinks
// under a set WT; the other unset values are then derived and, where a set
// neighbour leaves less room, shrunk to fit it.
const (
	defaultRequestTimeout = 10 * time.Second
	shareAcquire          = 0.2
	shareStatement        = 0.3
	shareLockMargin       = 0.1 // LOCK_TTL = S + this share
	shareLockWait         = 0.9
	shareWrite            = 1.5
	// minWriteMargin is the least time a derived HTTP_WRITE_TIMEOUT leaves
	// past the request's deadline: what an answer takes to be written once
	// its handler is done, on a loaded host. Half of REQUEST_TIMEOUT=50ms
	// was 25 ms: 20 of 100 concurrent reads ended in 40–150 ms and the
	// server closed their connections without an answer.
	minWriteMargin = time.Second
)

// writeTimeout is the HTTP_WRITE_TIMEOUT derived from a request deadline.
func writeTimeout(r time.Duration) time.Duration {
	return r + max(share(r, shareWrite-1), minWriteMargin)
}

// requestWithin is the longest request deadline that fits a set write
// timeout, in whole milliseconds (2 s ÷ 1.5 is 1.333333333 s): two thirds
// of it, which from 3 s on leaves writeTimeout's margin too. Under 3 s no
// deadline can keep both; the write timeout the user set decides.
func requestWithin(wt time.Duration) time.Duration {
	return share(wt, 1/shareWrite).Truncate(time.Millisecond)
}

// timeBudget is the chain of timeouts after derivation; set records which
// of them the user gave, for messages that say what to change.
type timeBudget struct {
	Request, Acquire, Statement, LockTTL, LockWait, Write time.Duration
	// Body bounds reading a request body (slow clients): 2 s, or half the
	// request if shorter, so the handler keeps time to answer.
	Body time.Duration
	set  map[string]bool
	// requestCappedBy and statementCappedBy name the set value that
	// lowered an unset REQUEST_TIMEOUT or DB_STATEMENT_TIMEOUT, so an
	// error can say why it is short.
	requestCappedBy, statementCappedBy string
}

// Load is the deadline of one shared load, counted from the moment it holds
// the lock: one acquire plus one statement.
func (b timeBudget) Load() time.Duration { return b.Acquire + b.Statement }

// minStatement is the shortest statement timeout a start accepts:
// REQUEST_TIMEOUT=3ms derived 0.9 ms, which PostgreSQL's whole
// milliseconds turned into 0 (no timeout at all), and at 5 ms the start's
// own reads (the cache signing key) ran out of time.
const minStatement = 5 * time.Millisecond

// minAcquire is the shortest acquire timeout a start accepts: at 1 ns
// every acquire ran out before it began, and the start failed on its
// first read with a message about the cache signing key.
const minAcquire = time.Millisecond

func share(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// readBudget reads the six timeouts and derives the unset ones.
func readBudget(p *envParser) timeBudget {
	names := []string{"REQUEST_TIMEOUT", "DB_ACQUIRE_TIMEOUT", "DB_STATEMENT_TIMEOUT", "LOCK_TTL", "LOCK_WAIT", "HTTP_WRITE_TIMEOUT", "BODY_READ_TIMEOUT"}
	b := timeBudget{set: map[string]bool{}}
	for _, n := range names {
		b.set[n] = p.set(n)
	}
	timeout := func(name string) time.Duration {
		d := p.duration(name, 0)
		if d > maxBudget {
			p.fail(name, p.getenv(name), "must be at most "+maxBudget.String())
			return maxBudget
		}
		return d
	}
	b.Request = timeout("REQUEST_TIMEOUT")
	b.Acquire = timeout("DB_ACQUIRE_TIMEOUT")
	b.Statement = timeout("DB_STATEMENT_TIMEOUT")
	b.LockTTL = timeout("LOCK_TTL")
	b.LockWait = timeout("LOCK_WAIT")
	b.Write = timeout("HTTP_WRITE_TIMEOUT")
	b.Body = timeout("BODY_READ_TIMEOUT")
	b.derive()
	return b
}

// maxBudget bounds each timeout of the budget: the derived ones are
// shares and sums of the set ones, and near time.Duration's limit they
// wrapped around (REQUEST_TIMEOUT=2562047h derived a negative
// HTTP_WRITE_TIMEOUT). A day is far past any request.
const maxBudget = 24 * time.Hour

func (b *timeBudget) derive() {
	if b.Request == 0 {
		r := defaultRequestTimeout
		if b.Acquire > 0 {
			r = max(r, share(b.Acquire, 1/shareAcquire))
		}
		if b.Statement > 0 {
			r = max(r, share(b.Statement, 1/shareStatement))
		}
		if b.LockWait > 0 {
			r = max(r, share(b.LockWait, 1/shareLockWait))
		}
		if b.LockTTL > 0 {
			// T = S + 0.1 R with S = 0.3 R: the lock's share is 0.4 R,
			// and at that share W = 0.9 R still covers T + L (0.9 R).
			r = max(r, share(b.LockTTL, 1/(shareStatement+shareLockMargin)))
		}
		if b.Body > 0 {
			r = max(r, 2*b.Body) // B = R/2 at most: time left to answer
		}
		if b.Write > 0 && requestWithin(b.Write) < r {
			r = requestWithin(b.Write)
			b.requestCappedBy = "HTTP_WRITE_TIMEOUT"
		}
		b.Request = r
	}
	r := b.Request
	// Shrink a derived value to fit a set neighbour, never to nothing: if
	// nothing fits, the rule between the set values says so in check.
	fit := func(want, room time.Duration) time.Duration {
		if room > 0 {
			return min(want, room)
		}
		return want
	}
	if b.Acquire == 0 {
		b.Acquire = share(r, shareAcquire)
		if b.Statement > 0 {
			b.Acquire = fit(b.Acquire, r-b.Statement)
		}
	}
	if b.Statement == 0 {
		b.Statement = fit(share(r, shareStatement), r-b.Acquire)
		if b.LockTTL > 0 && share(b.LockTTL, 0.75) < b.Statement {
			b.Statement = share(b.LockTTL, 0.75)
			b.statementCappedBy = "LOCK_TTL"
		}
	}
	if b.LockTTL == 0 {
		b.LockTTL = b.Statement + share(r, shareLockMargin)
	}
	if b.LockWait == 0 {
		b.LockWait = share(r, shareLockWait)
	}
	if b.Write == 0 {
		b.Write = writeTimeout(r)
	}
	if b.Body == 0 {
		b.Body = min(2*time.Second, r/2)
	}
}

// origin says where a value came from, for error messages.
func (b timeBudget) origin(name string) string {
	switch {
	case b.set[name]:
		return "set"
	case name == "REQUEST_TIMEOUT" && b.requestCappedBy != "":
		return "derived, capped by " + b.requestCappedBy
	case name == "DB_STATEMENT_TIMEOUT" && b.statementCappedBy != "":
		return "derived, capped by " + b.statementCappedBy
	}
	return "derived"
}

// check returns every broken rule of the chain, each naming both sides and
// the fix. Only values the user set can break a rule: derived ones are
// shrunk to fit.
func (b timeBudget) check() []error {
	type rule struct {
		ok         bool
		inner      string
		innerVal   time.Duration
		outer      string
		outerVal   time.Duration
		what, hint string
	}
	rules := []rule{
		{b.Statement < b.LockTTL, "DB_STATEMENT_TIMEOUT", b.Statement, "LOCK_TTL", b.LockTTL,
			"must be shorter than", "a query must not outlive its lock"},
		{b.Load() <= b.Request, "DB_ACQUIRE_TIMEOUT + DB_STATEMENT_TIMEOUT", b.Load(), "REQUEST_TIMEOUT", b.Request,
			"must be at most", "one load must fit in a request"},
		{b.LockWait < b.Request, "LOCK_WAIT", b.LockWait, "REQUEST_TIMEOUT", b.Request,
			"must be shorter than", "a waiter must give up before its request does"},
		{b.Request < b.Write, "REQUEST_TIMEOUT", b.Request, "HTTP_WRITE_TIMEOUT", b.Write,
			"must be shorter than", "or the server cuts answers the handler still writes"},
		{b.Body < b.Request, "BODY_READ_TIMEOUT", b.Body, "REQUEST_TIMEOUT", b.Request,
			"must be shorter than", "or a slow body leaves the handler no time"},
	}
	var errs []error
	if b.Statement < minStatement {
		fix := "raise REQUEST_TIMEOUT (the statement timeout is 0.3 of it) or set DB_STATEMENT_TIMEOUT"
		switch {
		case b.set["DB_STATEMENT_TIMEOUT"]:
			fix = "raise DB_STATEMENT_TIMEOUT"
		case b.statementCappedBy == "LOCK_TTL":
			fix = "raise LOCK_TTL (the statement timeout is at most 0.75 of it)"
		}
		errs = append(errs, fmt.Errorf("config: DB_STATEMENT_TIMEOUT=%s (%s) must be at least %s: PostgreSQL counts it in whole milliseconds (under one it turns the timeout off) and one query's round trip takes about one; %s",
			b.Statement, b.origin("DB_STATEMENT_TIMEOUT"), minStatement, fix))
	}
	if b.Acquire < minAcquire {
		errs = append(errs, fmt.Errorf("config: DB_ACQUIRE_TIMEOUT=%s (%s) must be at least %s: shorter, a wait for a pool connection ends before it begins and every query is refused",
			b.Acquire, b.origin("DB_ACQUIRE_TIMEOUT"), minAcquire))
	}
	for _, r := range rules {
		if !r.ok {
			errs = append(errs, fmt.Errorf("config: %s=%s (%s) %s %s=%s (%s): %s; change one of them",
				r.inner, r.innerVal.Round(time.Millisecond), b.originOf(r.inner), r.what, r.outer, r.outerVal.Round(time.Millisecond), b.origin(r.outer), r.hint))
		}
	}
	return errs
}

func (b timeBudget) originOf(name string) string {
	if name == "DB_ACQUIRE_TIMEOUT + DB_STATEMENT_TIMEOUT" {
		return b.origin("DB_ACQUIRE_TIMEOUT") + " + " + b.origin("DB_STATEMENT_TIMEOUT")
	}
	return b.origin(name)
}

// coversDeadHolder reports whether a waiter outlives a dead holder: its lock
// expiring and one takeover load. When it does not, the waiter gives up
// early (LOCK_WAITER decides what it answers), which run logs at start.
func (b timeBudget) coversDeadHolder() bool { return b.LockWait >= b.LockTTL+b.Load() }
