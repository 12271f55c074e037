package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/testkit/rediscluster"
)

// labClusterAddrs are the lab's own Redis Cluster nodes (3 masters + 3
// replicas), started and stopped by the experiment: LAB_CLUSTER_ADDRS or
// loopback ports 7111-7116, apart from the tests' 7101-7106.
func labClusterAddrs() []string {
	return rediscluster.AddrsFrom("LAB_CLUSTER_ADDRS",
		"127.0.0.1:7111,127.0.0.1:7112,127.0.0.1:7113,127.0.0.1:7114,127.0.0.1:7115,127.0.0.1:7116")
}

// redisClusterExp is the cluster experiment: the service on a local Redis
// Cluster — a cold key at 5 and 20 instances, a hot key's copies spread
// over the masters, and a master killed mid-load.
func (l *Lab) redisClusterExp(ctx context.Context) *Experiment {
	addrs := labClusterAddrs()
	x := &Experiment{Name: "cluster", Title: "the service on a Redis Cluster (3 masters + 3 replicas)",
		Setup: fmt.Sprintf("a local Redis Cluster on %s (redis-server, formed with go-redis), REDIS_CLUSTER_ADDRS set, L1 off, "+
			"%s on the DB link for the cold-key rows; node timeout %s", strings.Join(addrs, ","), l.delay, rediscluster.NodeTimeout),
		Expect: "cold key at 5 and 20 instances: 1 query, 0 lock keys left; HOT_KEY_COPIES=3: each master serves a third of the " +
			"key's GETs ± 20 %; a master killed mid-load: its replica promoted, every request answered, Redis used again without restart",
		Columns: []string{"row", "requests", "ok", "X-Cache", "p99", "DB queries", "result"}}
	dir := filepath.Join(os.TempDir(), "stampede-lab-cluster")
	if err := rediscluster.Start(ctx, dir, addrs); err != nil {
		return x.fail(err)
	}
	defer rediscluster.Stop(dir)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	base := map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(addrs, ","), "SHED_MAX_WAITING": "100000",
		"DB_ACQUIRE_TIMEOUT": "8s", "DB_STATEMENT_TIMEOUT": "1s", "REQUEST_TIMEOUT": "9s"}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	for _, n := range []struct{ instances, per, conns int }{{5, 200, 10}, {20, 100, 2}} {
		if err := flushCluster(ctx, rdb); err != nil {
			return x.fail(err)
		}
		label := fmt.Sprintf("cold key, %d × %d", n.instances, n.per)
		env := with("DB_MAIN_MAX_CONNS", strconv.Itoa(n.conns))
		r, err := l.row(ctx, x, label, n.instances, env, false, func(c *Cluster, r *Row) error {
			l.dbProxy.SetDelay(l.delay)
			l.phase(r, "burst", func() ([]Result, time.Duration) {
				return Burst(ctx, spread(c.Bases(), n.instances*n.per, samePath("/products/1")))
			})
			keys, err := clusterKeys(ctx, rdb, "lock:*")
			r.Figures["lock_keys_left"] = float64(len(keys))
			return err
		})
		if p := r.phase("burst"); p != nil {
			b := p.Load
			x.Table = append(x.Table, []string{label, itoa(b.Requests), itoa(b.OK), statusSummary(b.XCache), fmtMs(b.P99Ms),
				itoa(r.DBQueries), fmt.Sprintf("%s lock keys left", fnum(r.Figures["lock_keys_left"]))})
			x.check(r.DBQueries == 1 && r.Figures["lock_keys_left"] == 0 && b.OK == b.Requests,
				"%s: %d query, %d lock keys left, %d/%d ok (want 1, 0, all)", label, r.DBQueries, int(r.Figures["lock_keys_left"]), b.OK, b.Requests)
		}
		if err != nil {
			return x.fail(err)
		}
	}
	if err := l.copiesSpread(ctx, x, rdb, with("HOT_KEY_COPIES", "3", "HOT_KEY_DETECT", "false")); err != nil { // copies of every key from the first read
		return x.fail(err)
	}
	return x.fail(l.failover(ctx, x, rdb, with()))
}

// copiesSpread reads one hot key through 3 instances with 3 copies and
// counts each master's GETs in its own INFO commandstats.
func (l *Lab) copiesSpread(ctx context.Context, x *Experiment, rdb *redis.ClusterClient, env map[string]string) error {
	const reads = 3000
	if err := flushCluster(ctx, rdb); err != nil {
		return err
	}
	var before, after map[string]int
	r, err := l.row(ctx, x, "hot key, 3 copies", 3, env, false, func(c *Cluster, r *Row) error {
		if res := get(ctx, c.Bases()[0], "/products/2"); res.Status != 200 {
			return fmt.Errorf("warm /products/2: %d %s", res.Status, res.Err)
		}
		var err error
		if before, err = rediscluster.MasterGets(ctx, rdb); err != nil {
			return err
		}
		l.phase(r, "reads", func() ([]Result, time.Duration) {
			return Stream(ctx, spread(c.Bases(), reads, samePath("/products/2")), 16)
		})
		after, err = rediscluster.MasterGets(ctx, rdb)
		return err
	})
	if p := r.phase("reads"); p != nil && after != nil {
		var parts []string
		// The spread is measured against the GETs the masters saw: fewer
		// than the reads, since concurrent reads of a key on one instance
		// share one GET (cache sharedRead).
		total := 0
		for addr := range after {
			total += after[addr] - before[addr]
		}
		mean := float64(max(total, 1)) / float64(len(after))
		worst := 0.0
		for _, addr := range slices.Sorted(maps.Keys(after)) {
			d := after[addr] - before[addr]
			parts = append(parts, fmt.Sprintf("%s +%d", addr, d))
			worst = max(worst, abs(float64(d)-mean)/mean)
			r.Figures["gets_"+addr] = float64(d)
		}
		r.Figures["worst_deviation"] = worst
		x.Table = append(x.Table, []string{"hot key, 3 copies", itoa(p.Load.Requests), itoa(p.Load.OK), statusSummary(p.Load.XCache),
			fmtMs(p.Load.P99Ms), itoa(r.DBQueries), "cmdstat_get " + strings.Join(parts, ", ")})
		x.check(len(after) == 3 && total > 0 && worst <= 0.2, "copies: GETs per master %s, worst %.0f %% from an even third of %d (want ≤ 20 %%)",
			strings.Join(parts, ", "), 100*worst, total)
	}
	return err
}

// failover kills (SIGKILL) the master holding product 1 while 3 instances
// serve a steady read load over products 1..30, and measures how long the
// service was degraded: the time from the kill to the last request that was
// not a 2xx answered from Redis (HIT or STALE).
func (l *Lab) failover(ctx context.Context, x *Experiment, rdb *redis.ClusterClient, env map[string]string) error {
	const (
		workers  = 8
		before   = 5 * time.Second
		duration = 30 * time.Second
	)
	if err := flushCluster(ctx, rdb); err != nil {
		return err
	}
	var (
		kill, promoted time.Time
		results        []timedResult
	)
	r, err := l.row(ctx, x, "master killed mid-load", 3, env, false, func(c *Cluster, r *Row) error {
		for id := 1; id <= 30; id++ {
			get(ctx, c.Bases()[id%3], fmt.Sprintf("/products/%d", id))
		}
		master, err := rdb.MasterForKey(ctx, "product:v1:{1}")
		if err != nil {
			return err
		}
		pid, replica, err := masterFacts(ctx, rdb, master)
		if err != nil {
			return err
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			results = timedLoad(ctx, c.Bases(), workers, duration)
			close(done)
		})
		if err := sleepCtx(ctx, before); err != nil {
			return err
		}
		kill = time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill master %s (pid %d): %w", master.Options().Addr, pid, err)
		}
		promoted = waitPromoted(ctx, replica, 30*time.Second)
		<-done
		wg.Wait()
		l.phase(r, "load", func() ([]Result, time.Duration) {
			rs := make([]Result, len(results))
			for i, t := range results {
				rs[i] = t.Result
			}
			return rs, duration
		})
		r.Values["killed"] = master.Options().Addr
		r.Values["promoted"] = replica.Options().Addr
		return nil
	})
	p := r.phase("load")
	if p == nil || kill.IsZero() {
		return err
	}
	var lastBad, firstBad time.Time
	fivexx := 0
	for _, t := range results {
		if t.Status >= 500 || t.Status == 0 {
			fivexx++
		}
		ok := t.Status >= 200 && t.Status < 300 && (t.XCache == "HIT" || t.XCache == "STALE")
		if !ok && t.At.After(kill) {
			if firstBad.IsZero() {
				firstBad = t.At
			}
			lastBad = t.At
		}
	}
	window := time.Duration(0)
	if !lastBad.IsZero() {
		window = lastBad.Sub(kill)
	}
	promotion := "not promoted within 30 s"
	if !promoted.IsZero() {
		promotion = fmt.Sprintf("replica promoted %.1f s after the kill", promoted.Sub(kill).Seconds())
		r.Figures["promotion_seconds"] = promoted.Sub(kill).Seconds()
	}
	r.Figures["degraded_seconds"] = window.Seconds()
	r.Figures["5xx"] = float64(fivexx)
	x.Table = append(x.Table, []string{"master killed mid-load", itoa(p.Load.Requests), itoa(p.Load.OK), statusSummary(p.Load.XCache),
		fmtMs(p.Load.P99Ms), itoa(r.DBQueries), fmt.Sprintf("%s; degraded (not a Redis answer) for %.1f s; %d 5xx", promotion, window.Seconds(), fivexx)})
	x.check(!promoted.IsZero(), "failover: %s", promotion)
	x.check(fivexx == 0, "failover: %d requests failed with 5xx or no answer (want 0: PostgreSQL answers while the slot is down)", fivexx)
	x.check(!lastBad.IsZero() && lastBad.Before(kill.Add(duration-before-2*time.Second)) || lastBad.IsZero(),
		"failover: served from Redis again %.1f s after the kill, before the load ended, without restart", window.Seconds())
	x.note("the degraded window spans the node timeout (%s) plus the promotion and each instance's Redis breaker "+
		"(BREAKER_OPEN_MIN..MAX) reopening; meanwhile reads were answered from PostgreSQL (%d queries for the whole row)",
		rediscluster.NodeTimeout, r.DBQueries)
	return err
}

// timedResult is a Result with the moment its request was sent.
type timedResult struct {
	Result
	At time.Time
}

// timedLoad has workers send GETs over products 1..30, round-robin over the
// instances, back to back for d.
func timedLoad(ctx context.Context, bases []string, workers int, d time.Duration) []timedResult {
	client := newClient(workers)
	defer client.CloseIdleConnections()
	end := time.Now().Add(d)
	var (
		mu  sync.Mutex
		out []timedResult
		wg  sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for k := w; time.Now().Before(end) && ctx.Err() == nil; k += workers {
				at := time.Now()
				res := do(ctx, client, Target{Base: bases[k%len(bases)], Path: fmt.Sprintf("/products/%d", 1+k%30)})
				mu.Lock()
				out = append(out, timedResult{res, at})
				mu.Unlock()
				_ = sleepCtx(ctx, 10*time.Millisecond)
			}
		})
	}
	wg.Wait()
	return out
}

// masterFacts returns the pid of master's process (INFO server) and a
// client of its replica.
func masterFacts(ctx context.Context, rdb *redis.ClusterClient, master *redis.Client) (int, *redis.Client, error) {
	info, err := master.Info(ctx, "server").Result()
	if err != nil {
		return 0, nil, err
	}
	m := regexp.MustCompile(`process_id:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0, nil, fmt.Errorf("no process_id in INFO server of %s", master.Options().Addr)
	}
	pid, _ := strconv.Atoi(m[1])
	id, err := master.ClusterMyID(ctx).Result()
	if err != nil {
		return 0, nil, err
	}
	lines, err := master.Do(ctx, "CLUSTER", "REPLICAS", id).StringSlice()
	if err != nil || len(lines) == 0 {
		return 0, nil, fmt.Errorf("replica of %s: %v", master.Options().Addr, err)
	}
	addr := strings.Fields(lines[0])[1] // "<id> host:port@bus ..."
	addr = addr[:strings.IndexByte(addr, '@')]
	return pid, redis.NewClient(&redis.Options{Addr: addr}), nil
}

// waitPromoted polls the replica until it reports role:master, or zero
// time after within.
func waitPromoted(ctx context.Context, replica *redis.Client, within time.Duration) time.Time {
	defer replica.Close()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if info, err := replica.Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "role:master") {
			return time.Now()
		}
		if sleepCtx(ctx, 20*time.Millisecond) != nil {
			break
		}
	}
	return time.Time{}
}

// flushCluster empties every master: the lab started this cluster and owns
// its data.
func flushCluster(ctx context.Context, rdb *redis.ClusterClient) error {
	return rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushDB(ctx).Err() })
}

// clusterKeys lists the keys matching pattern on every master.
func clusterKeys(ctx context.Context, rdb *redis.ClusterClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		found, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, found...)
		mu.Unlock()
		return err
	})
	return keys, err
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
