package pgfailover

import (
	"context"
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
		if got := count(t, ctx, p.ReplicaURL("postgres")); got != 1 {
			t.Fatalf("rows on the synchronous replica right after the commit: got %d, want 1", got)
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
