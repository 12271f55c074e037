// Package rediscluster starts, forms and stops a local Redis Cluster for
// tests and the lab: Debian's redis-server with --cluster-enabled yes on
// loopback ports, formed with go-redis alone (CLUSTER ADDSLOTSRANGE, MEET,
// REPLICATE; no redis-cli), the first half of the addresses masters and
// the second half their replicas.
package rediscluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
)

// NodeTimeout is the nodes' cluster-node-timeout: how long a master must
// be unreachable before its replica takes over. Long enough that a busy
// test machine does not fail over by itself.
const NodeTimeout = 3 * time.Second

// Start runs one redis-server per address (loopback host:port, data and
// logs under dir, which it empties first) and forms the cluster. With an
// even number of addresses, node i+n/2 replicates master i; otherwise all
// are masters. It returns once every node reports cluster_state:ok and
// every replica is in sync. On failure it stops what it started.
func Start(ctx context.Context, dir string, addrs []string) (err error) {
	if len(addrs) < 3 {
		return fmt.Errorf("rediscluster: need at least 3 addresses, got %d", len(addrs))
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("rediscluster: redis-server not installed (apt-get install redis-server): %w", err)
	}
	Stop(dir) // leftovers of a run that was killed
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rediscluster: %w", err)
	}
	defer func() {
		if err != nil {
			Stop(dir)
		}
	}()
	for _, a := range addrs {
		if err := startNode(ctx, bin, dir, a); err != nil {
			return err
		}
	}
	return form(ctx, addrs)
}

// startNode starts one daemonized redis-server; its pid file lets Stop end
// it from any process, also after the one that started it is gone.
func startNode(ctx context.Context, bin, dir, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("rediscluster: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("rediscluster: will only start nodes on loopback, not %q", addr)
	}
	cmd := exec.CommandContext(ctx, bin,
		"--port", port, "--bind", host, "--daemonize", "yes",
		"--pidfile", filepath.Join(dir, port+".pid"), "--logfile", filepath.Join(dir, port+".log"),
		"--dir", dir, "--dbfilename", port+".rdb", "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+port+".conf",
		"--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
		"--protected-mode", "no")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rediscluster: start %s: %w: %s", addr, err, out)
	}
	return nil
}

// Stop ends every node whose pid file is in dir (SIGTERM, then SIGKILL
// after 5 s) and removes dir. It is safe on a dir that does not exist.
func Stop(dir string) {
	pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var running []int
	for _, f := range pids {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			if syscall.Kill(pid, syscall.SIGTERM) == nil {
				running = append(running, pid)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range running {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = os.RemoveAll(dir)
}

// form joins the started nodes into one cluster, as redis-cli --cluster
// create would: distinct config epochs, slots split evenly over the
// masters, MEET, then REPLICATE.
func form(ctx context.Context, addrs []string) error {
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a, DialTimeout: time.Second, MaxRetries: -1})
		defer nodes[i].Close()
	}
	masters := len(addrs)
	if len(addrs)%2 == 0 {
		masters = len(addrs) / 2
	}
	for i, n := range nodes {
		if err := until(ctx, 10*time.Second, "ping "+addrs[i], func() error { return n.Ping(ctx).Err() }); err != nil {
			return err
		}
		if err := n.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("rediscluster: set-config-epoch %s: %w", addrs[i], err)
		}
	}
	for i := range masters {
		first, last := cache.SlotRangeStart(i, masters), cache.SlotRangeStart(i+1, masters)-1
		if err := nodes[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			return fmt.Errorf("rediscluster: addslotsrange %s: %w", addrs[i], err)
		}
	}
	for i, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		p, _ := strconv.Atoi(port)
		if err := nodes[0].ClusterMeet(ctx, host, strconv.Itoa(p)).Err(); err != nil {
			return fmt.Errorf("rediscluster: meet %s: %w", addrs[i+1], err)
		}
	}
	for i, n := range nodes {
		err := until(ctx, 20*time.Second, "all nodes known to "+addrs[i], func() error {
			out, err := n.ClusterNodes(ctx).Result()
			if err != nil {
				return err
			}
			if got := strings.Count(strings.TrimSpace(out), "\n") + 1; got != len(addrs) || strings.Contains(out, "handshake") {
				return fmt.Errorf("%d of %d nodes known", got, len(addrs))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for r := masters; r < len(addrs); r++ {
		id, err := nodes[r-masters].ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("rediscluster: myid %s: %w", addrs[r-masters], err)
		}
		err = until(ctx, 20*time.Second, "replicate "+addrs[r], func() error {
			return nodes[r].ClusterReplicate(ctx, id).Err()
		})
		if err != nil {
			return err
		}
	}
	return until(ctx, 60*time.Second, "cluster_state:ok and replicas in sync", func() error {
		return Healthy(ctx, addrs)
	})
}

// Healthy reports whether every address is a node of one cluster that
// knows all of them, says cluster_state:ok, and (with replicas) has every
// master's replica linked up.
func Healthy(ctx context.Context, addrs []string) error {
	for _, a := range addrs {
		// A bare dial first: go-redis logs every failed dial of its pool.
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			return err
		}
		_ = conn.Close()
		n := redis.NewClient(&redis.Options{Addr: a, DialTimeout: time.Second, MaxRetries: -1})
		info, err := n.ClusterInfo(ctx).Result()
		var repl string
		if err == nil {
			repl, err = n.Info(ctx, "replication").Result()
		}
		_ = n.Close()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", a, err)
		case !strings.Contains(info, "cluster_state:ok"):
			return fmt.Errorf("%s: cluster_state not ok", a)
		case !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(addrs))+"\r"):
			return fmt.Errorf("%s: does not know all %d nodes", a, len(addrs))
		case len(addrs)%2 == 0 && strings.Contains(repl, "role:master") && strings.Contains(repl, "connected_slaves:0"):
			return fmt.Errorf("%s: master without a replica", a)
		case strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up"):
			return fmt.Errorf("%s: replica not in sync", a)
		}
	}
	return nil
}

// until retries fn every 50 ms until it succeeds, within runs out or ctx
// ends, and then reports what was awaited and the last error.
func until(ctx context.Context, within time.Duration, what string, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rediscluster: %s: %w (last: %w)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
