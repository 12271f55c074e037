package rediscluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultAddrs are the loopback nodes used when REDIS_CLUSTER_ADDRS is
// unset: three masters (7101-7103) and their replicas (7104-7106).
const DefaultAddrs = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105,127.0.0.1:7106"

// Addrs are the test cluster's nodes: REDIS_CLUSTER_ADDRS (comma-separated,
// so CI can pick free ports), or DefaultAddrs.
func Addrs() []string { return AddrsFrom("REDIS_CLUSTER_ADDRS", DefaultAddrs) }

// AddrsFrom reads a comma-separated list of nodes from the environment
// variable env, or def when it is unset: for a cluster of a test's or the
// lab's own, on ports apart from the shared one's.
func AddrsFrom(env, def string) []string {
	s := os.Getenv(env)
	if strings.TrimSpace(s) == "" {
		s = def
	}
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Ensure makes sure a healthy cluster answers on addrs: a running one is
// used as it is (and never stopped here); otherwise one is started. Test
// binaries of several packages run at once and share it: each holds a
// shared flock on a file named after the first address while it uses the
// cluster, and release stops a cluster that some helper started once no
// other process holds that lock.
func Ensure(ctx context.Context, addrs []string) (release func(), err error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("rediscluster: no addresses")
	}
	_, port, _ := net.SplitHostPort(addrs[0])
	base := filepath.Join(os.TempDir(), "stampede-rediscluster-"+port)
	dir := base + ".d"
	f, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rediscluster: %w", err)
	}
	if err := join(ctx, f, dir, addrs); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		// The last user out stops it; a user arriving meanwhile either
		// waits for the stop and starts a fresh one, or holds its shared
		// lock first and keeps this one running.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if _, err := os.Stat(dir); err == nil { // started by a helper, not by hand
				Stop(dir)
			}
		}
		f.Close()
	}, nil
}

// join leaves f locked shared with a healthy cluster on addrs. A cluster
// that is up is joined at once, beside every other user: waiting for an
// exclusive lock while it runs would wait for every other test binary (and
// for a fuzzing coordinator, which holds its lock the whole run) to end.
// Only a cluster that is down takes the exclusive lock, so one process
// starts it; the others keep trying to join meanwhile.
func join(ctx context.Context, f *os.File, dir string, addrs []string) error {
	fd := int(f.Fd())
	for {
		if syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB) == nil {
			if Healthy(ctx, addrs) == nil {
				return nil
			}
			_ = syscall.Flock(fd, syscall.LOCK_UN)
		}
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if Healthy(ctx, addrs) != nil {
				if err := Start(ctx, dir, addrs); err != nil {
					return err
				}
			}
			// Converting to a shared lock lets other test binaries in
			// while this one still counts as a user.
			if err := syscall.Flock(fd, syscall.LOCK_SH); err != nil {
				return fmt.Errorf("rediscluster: flock: %w", err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rediscluster: waiting for %s: %w", f.Name(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestingM is what goleak.VerifyTestMain and os.Exit(m.Run()) take.
type TestingM interface{ Run() int }

type mainWithCluster struct{ m TestingM }

// Main wraps a package's testing.M so its tests run with the cluster up:
// `goleak.VerifyTestMain(rediscluster.Main(m))` or `os.Exit(rediscluster.Main(m).Run())`.
// A cluster that cannot start fails the package: no test skips for it.
func Main(m TestingM) TestingM { return mainWithCluster{m} }

func (w mainWithCluster) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	release, err := Ensure(ctx, Addrs())
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: Redis Cluster for tests (REDIS_CLUSTER_ADDRS=%s): %v\n", strings.Join(Addrs(), ","), err)
		return 1
	}
	defer release()
	return w.m.Run()
}

// NewClient returns a cluster client on Addrs, closed when the test ends.
// It fails the test when the cluster does not answer.
func NewClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := rdb.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })
	if err != nil {
		t.Fatalf("rediscluster: cluster at %s not reachable (wrap TestMain with rediscluster.Main): %v", strings.Join(Addrs(), ","), err)
	}
	return rdb
}

var cmdstatGet = regexp.MustCompile(`(?m)^cmdstat_get:calls=(\d+)`)

// MasterGets reads every master's GET count from INFO commandstats, by
// node address: how a hot key's reads spread over the masters.
func MasterGets(ctx context.Context, rdb *redis.ClusterClient) (map[string]int, error) {
	var mu sync.Mutex
	out := map[string]int{}
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		calls := 0
		if m := cmdstatGet.FindStringSubmatch(info); m != nil {
			calls, _ = strconv.Atoi(m[1])
		}
		mu.Lock()
		out[n.Options().Addr] = calls
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rediscluster: INFO commandstats: %w", err)
	}
	return out, nil
}
