package pgfailover

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestFailoverKeepsSynchronousCommits: a row committed on the primary is
// on the replica; after the primary is killed and the replica promoted,
// the multi-host URL reaches the new primary, which has the row and
// accepts writes; the cleanup leaves no server running.
func TestFailoverKeepsSynchronousCommits(t *testing.T) {
	var pids []int
	t.Run("pair", func(t *testing.T) {
		p := Start(t, Options{Synchronous: true})
		pids = []int{postmasterPID(p.Primary.data), postmasterPID(p.Replica.data)}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		execSQL(t, ctx, p.URL("postgres"), "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
		// A synchronous commit waits for the replica to flush the WAL, not
		// to replay it: the row is on the replica at once, and visible
		// there once replayed (a moment later; "relation t does not
		// exist" once in a CI run beside four CPU burners).
		if got := replayed(t, ctx, p.ReplicaURL("postgres"), 1); got != 1 {
			t.Fatalf("rows on the synchronous replica after the commit: got %d, want 1", got)
		}
		p.KillPrimary()
		p.Promote()
		execSQL(t, ctx, p.URL("postgres"), "INSERT INTO t VALUES (2)")
		if got := count(t, ctx, p.URL("postgres")); got != 2 {
			t.Fatalf("rows on the new primary: got %d, want 2", got)
		}
	})
	for _, pid := range pids {
		if pid == 0 {
			t.Fatal("no postmaster pid was read")
		}
		if !Gone(pid, 0) {
			t.Errorf("postmaster %d still running after the cleanup", pid)
		}
	}
}

// TestSweepStopsAnOrphanedPair: a pair whose test process is gone is
// stopped by the next Start's sweep.
func TestSweepStopsAnOrphanedPair(t *testing.T) {
	p := Start(t, Options{})
	pid := postmasterPID(p.Primary.data)
	// An owner that no longer runs: a pid far above any in use.
	if err := os.WriteFile(p.dir+"/"+ownerFile, []byte("2147483646"), 0o644); err != nil {
		t.Fatal(err)
	}
	sweep()
	if !Gone(pid, 0) {
		t.Errorf("orphaned primary %d still running after the sweep", pid)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Errorf("orphaned pair's directory still there: %v", err)
	}
}

func execSQL(t *testing.T, ctx context.Context, url string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// replayed counts the rows of t on url until there are want, for at most
// 5 s: a replica shows a commit once it has replayed it.
func replayed(t *testing.T, ctx context.Context, url string, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect %s: %v", url, err)
		}
		var n int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
		_ = conn.Close(context.Background())
		if err == nil && n == want || time.Now().After(deadline) {
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStartMovesOffATakenPort: the port chosen for the primary is taken
// by the time the server binds it (here by a listener this test holds; in
// CI beside four CPU burners, by another test's outgoing connection). The
// server moves to another port and the pair starts.
func TestStartMovesOffATakenPort(t *testing.T) {
	Tool().Require(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	free, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := launch(ctx, Options{}, []int{taken, free[0]})
	if p != nil {
		t.Cleanup(p.Close)
	}
	if err != nil {
		t.Fatalf("launch with the primary's port taken: %v", err)
	}
	if p.Primary.Port == taken {
		t.Fatalf("primary on port %d, which this test holds", taken)
	}
	execSQL(t, ctx, p.URL("postgres"), "CREATE TABLE t (id int PRIMARY KEY)")
}
