package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// ErrRedisDown is returned for every command while the Redis breaker is
// open: the command was not sent.
var ErrRedisDown = errors.New("cache: redis circuit breaker open")

// Breaker is a go-redis hook that runs every command through a circuit
// breaker. While Redis is down or hanging, commands fail in microseconds
// instead of each waiting for a socket timeout, and the Cache falls back to
// loading through single-flight and a per-instance cap. Half-open probes
// close it by themselves when Redis returns.
type Breaker struct {
	cb *gobreaker.CircuitBreaker[struct{}]
}

// NewBreaker opens after failures consecutive failures, stays open for
// openFor, then admits up to halfOpenMax probes. onChange may be nil.
func NewBreaker(failures uint32, openFor time.Duration, halfOpenMax uint32, onChange func(from, to gobreaker.State)) *Breaker {
	return &Breaker{cb: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         "redis",
		MaxRequests:  halfOpenMax,
		Timeout:      openFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool { return !redisOutage(err) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if onChange != nil {
				onChange(from, to)
			}
		},
	})}
}

// State is the breaker's current state.
func (b *Breaker) State() gobreaker.State { return b.cb.State() }

// DialHook passes dials through: they happen inside processed commands.
func (b *Breaker) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook guards single commands.
func (b *Breaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isSetup(cmd) {
			return next(ctx, cmd)
		}
		return b.run(func() error { return next(ctx, cmd) }, func(err error) { cmd.SetErr(err) })
	}
}

// ProcessPipelineHook guards pipelines and MULTI blocks as one call.
func (b *Breaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isSetup(cmds[0]) {
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
	_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, call() })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		err = fmt.Errorf("%w (%v)", ErrRedisDown, err)
		refuse(err)
	}
	return err
}

// isSetup reports whether cmd is part of go-redis's connection set-up
// (HELLO, AUTH, SELECT, CLIENT SETINFO), which runs through the client's
// hooks from inside the dial of a guarded command. Guarding it too would let
// set-up use up the half-open probe slots, so the breaker could never close;
// the guarded command around it already counts the outcome.
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
