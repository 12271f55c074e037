package redisconn

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// ReloadOnOutage is a go-redis hook for a Cluster client that asks it to
// reload the cluster's slot map whenever a command meets an outage (a
// refused, reset or timed-out connection, or the Redis breaker open).
//
// go-redis reloads its slot map on MOVED/ASK replies and otherwise only
// every ClusterStateReloadInterval (60 s by default). A master that dies
// answers nothing, so no MOVED ever comes: after its replica is promoted the
// client would keep dialling the dead address for up to a minute, and every
// read of that master's slots would go to the database. ReloadState is
// cheap to call often: go-redis runs at most one reload at a time and
// pauses 200 ms after each. Add it before the breaker, so it sees the
// breaker's refusals too and the half-open probes find the new master.
func ReloadOnOutage(cc *redis.ClusterClient) redis.Hook { return reloadHook{cc} }

type reloadHook struct{ cc *redis.ClusterClient }

func (h reloadHook) outage(ctx context.Context, err error) {
	if redisOutage(err) || errors.Is(err, ErrBreakerOpen) {
		h.cc.ReloadState(ctx)
	}
}

func (h reloadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.outage(ctx, err)
		return err
	}
}

func (h reloadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.outage(ctx, err)
		return err
	}
}
