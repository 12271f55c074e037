package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a cluster may take to answer /readyz.
const readyTimeout = 60 * time.Second

// baseEnv is what every instance runs with unless an experiment overrides
// it: no L1 (each request reaches Redis, so the cache modes differ only in
// what they do on a miss), no rate limit (the lab is one client IP), and
// small pools: PostgreSQL allows 100 connections for every instance of
// every experiment and for whatever else runs on this machine. Builds that
// have an admin listener get none: N instances cannot share its port.
var baseEnv = map[string]string{
	"ADMIN_ADDR":           "off",
	"L1_TTL":               "0",
	"RATE_LIMIT":           "off",
	"DB_MAIN_MAX_CONNS":    "4",
	"DB_REPORTS_MAX_CONNS": "1",
	"LOG_LEVEL":            "info",
}

// Cluster is N instances of the service binary, each its own process, on a
// fresh database (a copy of the migrated template) reached through the DB
// proxy, and on Redis logical database 10, directly or through the Redis
// proxy.
type Cluster struct {
	lab       *Lab
	Name      string
	DB        string
	Env       map[string]string // the full environment of every instance
	Instances []*Instance
}

// Instance is one running service process.
type Instance struct {
	Index int
	Base  string // http://host:port
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has exited
	log   *os.File
	// Started and Listening: when the process was started and when the
	// lab first read its "listening" line (time to listen, at 20 ms).
	Started, Listening time.Time
}

// StartCluster starts n instances with the base environment overlaid by env
// and waits until every one answers GET /readyz with 200.
func (l *Lab) StartCluster(ctx context.Context, name string, n int, env map[string]string, viaRedisProxy bool) (*Cluster, error) {
	l.dbProxy.Reset()
	l.redisProxy.Reset()
	if err := flushRedis(ctx, l.rdb); err != nil {
		return nil, err
	}
	c := &Cluster{lab: l, Name: name, DB: "lab_" + randomHex(6)}
	if err := l.pg.CreateDatabase(ctx, c.DB, l.template); err != nil {
		return nil, err
	}
	redisAddr := l.redisAddr
	if viaRedisProxy {
		redisAddr = l.redisProxy.Addr()
	}
	c.Env = maps.Clone(baseEnv)
	maps.Copy(c.Env, env)
	c.Env["HTTP_ADDR"] = "127.0.0.1:0"
	c.Env["DATABASE_URL"] = l.pg.url(c.DB, l.dbProxy.Addr())
	c.Env["REDIS_URL"] = fmt.Sprintf("redis://%s/%d", redisAddr, redisDB)
	if c.Env["REDIS_CLUSTER_ADDRS"] != "" {
		// On a cluster REDIS_URL gives only credentials, and the service
		// refuses a database other than 0 (a cluster has no other).
		c.Env["REDIS_URL"] = fmt.Sprintf("redis://%s/0", redisAddr)
	}

	type started struct {
		inst *Instance
		err  error
	}
	ch := make(chan started, n)
	for i := range n {
		go func() {
			inst, err := l.startInstance(ctx, c, i)
			ch <- started{inst, err}
		}()
	}
	var errs []error
	for range n {
		s := <-ch
		if s.inst != nil {
			c.Instances = append(c.Instances, s.inst)
		}
		errs = append(errs, s.err)
	}
	if err := errors.Join(errs...); err != nil {
		c.Close(context.Background())
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// Instance order is start order; sort by index so round-robin is stable.
	sortInstances(c.Instances)
	if err := c.waitReady(ctx); err != nil {
		c.Close(context.Background())
		return nil, err
	}
	for _, inst := range c.Instances {
		if l.filterLoadTimed {
			break
		}
		if _, err := waitFilter(ctx, inst.Base); err != nil {
			c.Close(context.Background())
			return nil, err
		}
	}
	return c, nil
}

func (l *Lab) startInstance(ctx context.Context, c *Cluster, i int) (*Instance, error) {
	logPath := filepath.Join(l.logDir, fmt.Sprintf("%s-%d.log", c.Name, i))
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(l.bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// An instance must not outlive the lab if the lab is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The log goes straight to its file (no pipe for the lab to pump during
	// a burst); the lab reads the file for the "listening" line.
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", l.bin, err)
	}
	inst := &Instance{Index: i, cmd: cmd, done: make(chan struct{}), log: f, Started: time.Now()}
	go func() {
		_ = cmd.Wait()
		close(inst.done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		if addr := listeningAddr(logPath); addr != "" {
			inst.Base, inst.Listening = "http://"+addr, time.Now()
			return inst, nil
		}
		select {
		case <-inst.done:
			return inst, fmt.Errorf("instance %d exited before listening (log %s): %s", i, logPath, lastLines(logPath))
		case <-ctx.Done():
			return inst, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return inst, fmt.Errorf("instance %d did not log \"listening\" within %s (log %s)", i, readyTimeout, logPath)
		}
	}
}

// listeningAddr returns the address of the service's "listening" log line
// in the JSON log at path, or "" while there is none.
func listeningAddr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
			return rec.Addr
		}
	}
	return ""
}

// lastLines returns the last lines of the log at path, for error messages.
func lastLines(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}

// waitReady polls GET /readyz on every instance until each answers 200.
func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, inst := range c.Instances {
		for {
			resp, err := client.Get(inst.Base + "/readyz")
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: instance %d not ready within %s (last: %v)", c.Name, inst.Index, readyTimeout, err)
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bases lists the instances' base URLs in index order.
func (c *Cluster) Bases() []string {
	out := make([]string, len(c.Instances))
	for i, inst := range c.Instances {
		out[i] = inst.Base
	}
	return out
}

// Stop sends SIGTERM to every instance and waits for each to exit (SIGKILL
// after 15 s). The links are made fast first, so that closing the pools
// does not wait on an injected delay.
func (c *Cluster) Stop() {
	c.lab.dbProxy.SetDelay(0)
	var wg sync.WaitGroup
	for _, inst := range c.Instances {
		wg.Go(func() { inst.stop() })
	}
	wg.Wait()
}

func (inst *Instance) stop() {
	defer inst.log.Close()
	select {
	case <-inst.done:
		return
	default:
	}
	_ = inst.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-inst.done:
	case <-time.After(15 * time.Second):
		_ = inst.cmd.Process.Kill()
		<-inst.done
	}
}

// Close stops the instances, reads how many product-by-id queries the
// database served over the cluster's whole life, and drops the database.
func (c *Cluster) Close(ctx context.Context) (scans int64, err error) {
	c.Stop()
	scans, err = c.lab.pg.SettledScans(ctx, c.DB)
	if dropErr := c.lab.pg.DropDatabase(context.Background(), c.DB); err == nil {
		err = dropErr
	}
	return scans, err
}

func sortInstances(s []*Instance) {
	slices.SortFunc(s, func(a, b *Instance) int { return a.Index - b.Index })
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Kill ends the instance with SIGKILL, as a crash would: no shutdown, no
// unlock; what it held in Redis stays until it expires.
func (inst *Instance) Kill() {
	_ = inst.cmd.Process.Kill()
	<-inst.done
}
