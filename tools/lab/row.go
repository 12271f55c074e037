package main

import (
	"context"
	"errors"
	"time"
)

// row runs one configuration on a cluster of its own: start n instances with
// env, run body, read the service's metrics, stop the instances and count
// the queries PostgreSQL executed. It also checks that the two counts agree:
// the server's idx_scan and the Execute messages seen on the link.
func (l *Lab) row(ctx context.Context, x *Experiment, label string, n int, env map[string]string, viaRedisProxy bool,
	body func(*Cluster, *Row) error,
) (*Row, error) {
	r := &Row{Label: label, Env: env, Figures: map[string]float64{}, Values: map[string]string{}}
	x.Rows = append(x.Rows, r)
	c, err := l.StartCluster(ctx, x.Name+"-"+slug(label), n, env, viaRedisProxy)
	if err != nil {
		return r, errors.Join(err, l.dbProxy.Err(), l.redisProxy.Err())
	}
	link0 := l.dbProxy.Stats()
	bodyErr := body(c, r)
	r.App = scrapeSum(ctx, c.Bases())
	l.redisProxy.SetDown(false)
	c.Stop() // background loads finish before the process exits
	r.LinkExecutes = l.dbProxy.Stats().Sub(link0).Executes
	scans, err := c.Close(ctx)
	r.DBQueries = scans
	l.dbProxy.Reset()
	if err == nil && !x.upkeepScans {
		x.check(r.DBQueries == r.LinkExecutes+r.Direct,
			"%s: queries counted by PostgreSQL (%d) = Execute messages on the link (%d)%s",
			label, r.DBQueries, r.LinkExecutes, plural(r.Direct, " + %d run by the lab itself"))
	}
	return r, errors.Join(bodyErr, err, l.dbProxy.Err(), l.redisProxy.Err())
}

// phase runs one load (fn may return nil results for a pure wait) and
// records it with what crossed the links meanwhile.
func (l *Lab) phase(r *Row, name string, fn func() ([]Result, time.Duration)) *Phase {
	db0, rd0 := l.dbProxy.Stats(), l.redisProxy.Stats()
	rs, wall := fn()
	p := &Phase{Name: name, DBLink: l.dbProxy.Stats().Sub(db0), results: rs}
	if rs != nil {
		p.Load = Summarize(rs, wall)
	}
	if rd := l.redisProxy.Stats().Sub(rd0); rd != (ProxyStats{}) {
		p.RedisLink = &rd
	}
	r.Phases = append(r.Phases, p)
	return p
}

// spread builds total requests, round-robin over the instances: request k
// goes to instance k mod n, for path(k).
func spread(bases []string, total int, path func(k int) string) []Target {
	ts := make([]Target, total)
	for k := range ts {
		ts[k] = Target{Base: bases[k%len(bases)], Path: path(k)}
	}
	return ts
}

func samePath(p string) func(int) string { return func(int) string { return p } }

// lockKeys counts the lock:* keys left in the lab's Redis database.
func (l *Lab) lockKeys(ctx context.Context) (int, error) {
	n := 0
	iter := l.rdb.Scan(ctx, 0, "lock:*", 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}
