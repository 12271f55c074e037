package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/breaker"
)

// ErrBreakerOpen is returned for every command while the Redis breaker is
// open: the command was not sent.
var ErrBreakerOpen = errors.New("redisconn: redis circuit breaker open")

// Breaker is a go-redis hook that runs every command of a client through
// the shared circuit breaker policy (package breaker): the cache, locks,
// rate limits and pub/sub alike. While Redis is down or hanging, commands
// fail in microseconds with ErrBreakerOpen instead of each waiting for a
// socket timeout, and their callers fall back at once (the cache loads
// through single-flight and a per-instance cap). While open, the breaker itself PINGs Redis on its
// schedule (soon after opening, then backing off); the first PONG closes it.
type Breaker struct {
	b *breaker.Breaker
}

// NewBreaker guards rdb: it adds itself as rdb's hook and probes with PING
// through rdb (bypassing itself). cfg.Name defaults to "redis"; Probe and
// the error classifiers are set here. Close stops the probes.
func NewBreaker(rdb redis.UniversalClient, cfg breaker.Config) *Breaker {
	if cfg.Name == "" {
		cfg.Name = "redis"
	}
	cfg.IsFailure = redisOutage
	cfg.IsExcluded = callerSide
	cfg.Probe = func(ctx context.Context) error { return rdb.Ping(context.WithValue(ctx, probeKey{}, true)).Err() }
	b := &Breaker{b: breaker.New(cfg)}
	rdb.AddHook(b)
	return b
}

// probeKey marks the breaker's own PING, which must reach Redis while the
// breaker refuses everything else.
type probeKey struct{}

func isProbe(ctx context.Context) bool { return ctx.Value(probeKey{}) != nil }

// State is the breaker's current state.
func (b *Breaker) State() breaker.State { return b.b.State() }

// Snapshot is the breaker's state, next probe and failed probes.
func (b *Breaker) Snapshot() breaker.Snapshot { return b.b.Snapshot() }

// Close stops the probe schedule and waits for a running probe.
func (b *Breaker) Close() { b.b.Close() }

// DialHook passes dials through: they happen inside processed commands.
func (b *Breaker) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook guards single commands.
func (b *Breaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isSetup(cmd) || isProbe(ctx) {
			return next(ctx, cmd)
		}
		return b.run(func() error { return next(ctx, cmd) }, func(err error) { cmd.SetErr(err) })
	}
}

// ProcessPipelineHook guards pipelines and MULTI blocks as one call.
func (b *Breaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isSetup(cmds[0]) || isProbe(ctx) {
			return next(ctx, cmds)
		}
		return b.run(func() error { return next(ctx, cmds) }, func(err error) {
			for _, c := range cmds {
				c.SetErr(err)
			}
		})
	}
}

func (b *Breaker) run(call func() error, refuse func(error)) error {
	err := b.b.Do(call)
	if errors.Is(err, breaker.ErrOpen) {
		err = fmt.Errorf("%w (%v)", ErrBreakerOpen, err)
		refuse(err)
	}
	return err
}

// isSetup reports whether cmd is part of go-redis's connection set-up
// (HELLO, AUTH, SELECT, CLIENT SETINFO), which runs through the client's
// hooks from inside the dial of a guarded command. Guarding it too would let
// set-up fail while the breaker is open, so the breaker's own probe could
// never connect; the guarded command around it already counts the outcome.
func isSetup(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "client", "readonly":
		return true
	}
	return false
}

// redisOutage says whether err means Redis itself is failing. A missing key,
// an error reply (Redis answered), or a caller's cancellation do not.
func redisOutage(err error) bool {
	var reply redis.Error
	var netErr net.Error
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &netErr):
		return true // timeouts, refused and reset connections
	case errors.As(err, &reply):
		return false
	}
	// go-redis reports some connection failures without a net.Error: a pool
	// whose every connection hangs, or a server that closed the socket. A
	// caller's own deadline is not Redis's fault (read timeouts, which are,
	// arrive as net.Error).
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// callerSide reports errors that say nothing about Redis: the caller gave
// up (cancelled, or its own deadline passed — a read timeout, which is
// Redis's fault, arrives as a net.Error instead). They count neither way,
// so a cancellation between two timeouts does not reset the failure streak.
func callerSide(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &netErr)
}
