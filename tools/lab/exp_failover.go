package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"time"

	"github.com/stampede-guard/api/internal/testkit/pgfailover"
)

// failoverBack bounds how long after the promotion orders may take to
// succeed again: the main breaker opened about when the primary died, a
// second before the promotion, and probes 0.4, 1.1, 2.6 s… after opening;
// then one connect. The e2e test holds the same bound.
const failoverBack = 5 * time.Second

// pgFailover is the PostgreSQL failover experiment: a primary and its
// synchronous streaming replica of the lab's own (internal/testkit/
// pgfailover), the instances on a multi-host DATABASE_URL with
// target_session_attrs=read-write; under reads of hot keys and orders the
// primary is killed and, a second later, the replica promoted.
func (l *Lab) pgFailover(ctx context.Context) *Experiment {
	const n, readRate, orderRate = 2, 100.0, 20.0
	const before, detect, after = 3 * time.Second, time.Second, 3 * time.Second
	x := &Experiment{Name: "failover", Title: "the PostgreSQL primary is killed and its replica promoted under load",
		Setup: fmt.Sprintf("a primary and a synchronous streaming replica started from the machine's PostgreSQL binaries; "+
			"%d instances with DATABASE_URL naming both hosts, target_session_attrs=read-write, DATABASE_READ_URL at the replica; "+
			"open loop of %.0f/s GETs of 8 products in the cache and %.0f/s orders (Idempotency-Key, retried with it every "+
			"200 ms on the other instance); after %s the primary is stopped -m immediate, %s later the replica promoted, "+
			"then %s more after the first order on it", n, readRate, orderRate, before, detect, after),
		Expect: "orders succeed again within " + failoverBack.String() + " of the promotion, without a restart; every 201 is " +
			"one row on the new primary (none lost, none twice); the cached reads are answered 200 throughout; no 500",
		Columns: []string{"kill → first order", "promotion → first order", "orders", "created", "lost", "duplicated",
			"gave up", "attempts", "window reads 200", "window reads 503", "window reads other", "500", "other 5xx",
			"cache loads in window", "main-pool acquires in window", "probes in window", "xacts on new primary", "orders after promotion"}}
	if why := failoverSkip(); why != "" {
		x.Skipped = why
		return x
	}
	pair, err := pgfailover.Launch(ctx, pgfailover.Options{Synchronous: true})
	if pair != nil {
		defer pair.Close()
	}
	if err != nil {
		return x.fail(err)
	}
	db := "lab_failover"
	c, err := l.startFailoverCluster(ctx, pair, db, n)
	if c != nil {
		defer c.Stop()
	}
	if err != nil {
		return x.fail(err)
	}
	hot := []int{1, 2, 3, 4, 5, 6, 7, 8}
	for _, id := range hot {
		if a := getAnswer(ctx, http.DefaultClient, fmt.Sprintf("%s/products/%d", c.Instances[0].Base, id)); a.status != http.StatusOK {
			return x.fail(fmt.Errorf("warm GET /products/%d: %d", id, a.status))
		}
	}
	newPrimary := &PG{admin: pair.ReplicaURL("postgres")}
	load := newFailoverLoad(c.Bases(), "failover-"+randomHex(4)+"-", hot)
	load.start(ctx, readRate, orderRate)
	ended := false
	defer func() {
		if !ended {
			load.end()
		}
	}()
	if sleepCtx(ctx, before) != nil {
		return x.fail(ctx.Err())
	}
	m0 := scrapeSum(ctx, c.Bases())
	x0, err := newPrimary.Transactions(ctx, db)
	if err != nil {
		return x.fail(fmt.Errorf("replica's statistics: %w", err))
	}
	killed := time.Now()
	if err := pair.Stop(ctx, pair.Primary); err != nil {
		return x.fail(err)
	}
	if sleepCtx(ctx, detect) != nil {
		return x.fail(ctx.Err())
	}
	if err := pair.PromoteReplica(ctx); err != nil {
		return x.fail(err)
	}
	promoted := time.Now()
	waitUntil(ctx, 4*failoverBack, func() bool { return !load.firstCreated(killed).IsZero() })
	m1 := scrapeSum(ctx, c.Bases())
	first := load.firstCreated(killed)
	_ = sleepCtx(ctx, after)
	load.end()
	ended = true
	c.Stop()
	if err := newPrimary.WaitNoBackends(ctx, db, 20*time.Second); err != nil {
		return x.fail(err)
	}
	x1, err := newPrimary.Transactions(ctx, db)
	if err != nil {
		return x.fail(err)
	}
	oc, err := load.ledger.check(ctx, newPrimary, db, load.prefix)
	if err != nil {
		return x.fail(err)
	}
	s := summarizeFailover(load, killed, promoted, first)
	l.reportFailover(x, s, oc, m0, m1, x1-x0, promoted.Sub(killed))
	return x
}

// startFailoverCluster creates the app's database through the multi-host
// URL (`api createdb`, as an operator would), then starts n instances on
// it with Redis on the lab's database, and waits until they are ready.
func (l *Lab) startFailoverCluster(ctx context.Context, pair *pgfailover.Pair, db string, n int) (*Cluster, error) {
	if err := flushRedis(ctx, l.rdb); err != nil {
		return nil, err
	}
	createdb := exec.CommandContext(ctx, l.bin, "createdb")
	createdb.Env = append(os.Environ(), "DATABASE_URL="+pair.URL(db))
	if out, err := createdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("createdb on the multi-host URL: %w: %s", err, out)
	}
	// A synchronous commit is flushed on the replica, not yet replayed:
	// the reports pool, on the replica, would find no database to ping.
	replica := &PG{admin: pair.ReplicaURL("postgres")}
	if !waitUntil(ctx, 30*time.Second, func() bool { return replica.HasDatabase(ctx, db) }) {
		return nil, fmt.Errorf("database %s not replayed on the replica within 30 s", db)
	}
	c := &Cluster{lab: l, Name: "failover", DB: db, Env: maps.Clone(baseEnv)}
	c.Env["HTTP_ADDR"] = "127.0.0.1:0"
	c.Env["DATABASE_URL"] = pair.URL(db)
	c.Env["DATABASE_READ_URL"] = pair.ReplicaURL(db)
	c.Env["REDIS_URL"] = fmt.Sprintf("redis://%s/%d", l.redisAddr, redisDB)
	// The first instance migrates; the others start on a migrated schema.
	for i := range n {
		inst, err := l.startInstance(ctx, c, i)
		if inst != nil {
			c.Instances = append(c.Instances, inst)
		}
		if err == nil && i == 0 {
			err = c.waitReady(ctx)
		}
		if err != nil {
			return c, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return c, err
	}
	for _, inst := range c.Instances {
		if _, err := waitFilter(ctx, inst.Base); err != nil {
			return c, err
		}
	}
	return c, nil
}

// failoverSkip says why the experiment cannot run here, or "".
func failoverSkip() string {
	if pgfailover.Tool().Lookup() == "" {
		return "no PostgreSQL server binaries (pg_ctl under /usr/lib/postgresql/<version>/bin, or PG_CTL): apt-get install postgresql"
	}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root; the kit runs it as postgres.
		if _, err := exec.LookPath("runuser"); err != nil {
			return "the lab runs as root and there is no runuser to start PostgreSQL as the postgres user"
		}
		if _, err := user.Lookup("postgres"); err != nil {
			return "the lab runs as root and there is no postgres user to start PostgreSQL as"
		}
	}
	return ""
}

// waitUntil polls cond every 20 ms for up to within and reports whether
// it became true.
func waitUntil(ctx context.Context, within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) || sleepCtx(ctx, 20*time.Millisecond) != nil {
			return false
		}
	}
	return true
}

// metricSum adds the series of m whose name starts with name and whose
// labels contain every one of labels.
func metricSum(m map[string]float64, name string, labels ...string) float64 {
	var sum float64
	for k, v := range m {
		if !strings.HasPrefix(k, name) {
			continue
		}
		all := true
		for _, lb := range labels {
			all = all && strings.Contains(k, lb)
		}
		if all {
			sum += v
		}
	}
	return sum
}
