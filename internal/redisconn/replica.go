package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/breaker"
)

// ReplicaReads is a second client of a cluster for reads that may be served
// by replicas: rdb's options plus ReadOnly and RouteRandomly, so a GET goes
// to any node of its slot, master or replica. The cache reads only hot-key
// copies through it (cache.Config.ReplicaReads): the entry, locks and the
// lock path's double-check stay on masters, where replication lag cannot
// reach them. Not RouteByLatency: it sends every read to the one closest
// node, which piles a hot key back onto one server, and before go-redis
// v9.5.4 it could pick a node outside the slot (MOVED storms, go-redis
// issue #3023). While b is open the client refuses at once, as the main one
// does, instead of dialling replicas of a Redis that is down. Nil when rdb
// is not a cluster client.
func ReplicaReads(rdb redis.UniversalClient, b *Breaker) *redis.ClusterClient {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	opt := *cc.Options()
	opt.ReadOnly, opt.RouteRandomly, opt.RouteByLatency = true, true, false
	rc := redis.NewClusterClient(&opt)
	rc.AddHook(ReloadOnOutage(rc))
	rc.AddHook(openGate{b})
	return rc
}

// openGate refuses commands while the Redis breaker is open, without
// counting their outcomes: a replica's own failures must not open the
// breaker of every Redis call (the cache falls back to the master).
type openGate struct{ b *Breaker }

func (g openGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g openGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g.b.State() == breaker.Open {
			cmd.SetErr(ErrBreakerOpen)
			return ErrBreakerOpen
		}
		return next(ctx, cmd)
	}
}

func (g openGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next // the cache pipelines nothing through this client
}
