package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/pgfailover"
)

// failoverFind bounds how long a pool may take to reach the server that
// took over, counted from the moment it can be reached: the breaker's
// probes (0.4 s, then 1.1 s, 2.6 s… after it opened) plus a connect, with
// a margin for a loaded 2-core machine.
const failoverFind = 5 * time.Second

// serverPort is the port of the server pool's next statement runs on.
func serverPort(ctx context.Context, pool *db.Pool) (int, error) {
	var port int
	err := pool.With(ctx, func(c db.Conn) error {
		return c.QueryRow(ctx, "SELECT inet_server_port()").Scan(&port)
	})
	return port, err
}

// waitPort polls until the pool's statements run on want, and returns how
// long that took.
func waitPort(t *testing.T, pool *db.Pool, want int) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	var got int
	for time.Since(start) < failoverFind {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, last = serverPort(ctx, pool)
		cancel()
		if last == nil && got == want {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pool not on port %d within %s: last port %d, error %v", want, failoverFind, got, last)
	return 0
}

// TestPoolFollowsPromotion: a pool on the multi-host URL with
// target_session_attrs=read-write runs on the primary, and after the
// primary dies and the replica is promoted, on the promoted replica,
// without being reopened.
func TestPoolFollowsPromotion(t *testing.T) {
	pair := pgfailover.Start(t, pgfailover.Options{Synchronous: true})
	pool := openPoolAt(t, db.Config{URL: pair.URL("postgres")})
	waitPort(t, pool, pair.Primary.Port)
	pair.KillPrimary()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if _, err := serverPort(ctx, pool); err == nil {
		t.Error("a statement succeeded with the primary dead and the replica not promoted (read-write must refuse a standby)")
	}
	cancel()
	pair.Promote()
	took := waitPort(t, pool, pair.Replica.Port)
	t.Logf("on the promoted replica %s after the promotion", took.Round(time.Millisecond))
}

// TestReportsPoolFallsBackToPrimary: a pool on the replica with the
// primary as FallbackURL (the reports pool with DATABASE_READ_URL) runs on
// the replica, and on the primary once the replica is gone; the move is
// reported once, naming the primary (the app logs it), and OnFallback
// says so.
func TestReportsPoolFallsBackToPrimary(t *testing.T) {
	pair := pgfailover.Start(t, pgfailover.Options{})
	var mu sync.Mutex
	var moves []string
	pool := openPoolAt(t, db.Config{Name: "reports", URL: pair.ReplicaURL("postgres"), FallbackURL: pair.URL("postgres"),
		OnFallback: func(on bool, addr string) {
			mu.Lock()
			defer mu.Unlock()
			moves = append(moves, fmt.Sprintf("%t %s", on, addr))
		}})
	waitPort(t, pool, pair.Replica.Port)
	mu.Lock()
	if len(moves) != 0 || pool.OnFallback() {
		t.Errorf("on the replica: moves reported %q, OnFallback %t; want none, false", moves, pool.OnFallback())
	}
	mu.Unlock()
	pair.KillReplica()
	took := waitPort(t, pool, pair.Primary.Port)
	t.Logf("on the primary %s after the replica died", took.Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("true 127.0.0.1:%d", pair.Primary.Port)
	if len(moves) != 1 || moves[0] != want || !pool.OnFallback() {
		t.Errorf("on the primary: moves reported %q, OnFallback %t; want [%q], true", moves, pool.OnFallback(), want)
	}
}
