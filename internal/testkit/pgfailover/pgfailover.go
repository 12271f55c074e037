// Package pgfailover starts a PostgreSQL primary and a streaming replica
// of a test's own, from the machine's PostgreSQL binaries (initdb,
// pg_basebackup, pg_ctl under /usr/lib/postgresql/<version>/bin), on free
// loopback ports in a temporary directory, so a test can kill the primary
// and promote the replica as a managed database's failover does. As root
// (PostgreSQL refuses to run as root) every binary runs as the postgres
// user through runuser. Everything started is stopped when the test ends,
// and a run killed before its cleanup is swept by the next Start.
package pgfailover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/optional"
)

// dirPrefix names the temporary directories Start makes (sweep.go).
const dirPrefix = "stampede-pgfailover-"

// Tool is pg_ctl as an optional program: Debian's packages put the server
// binaries in /usr/lib/postgresql/<version>/bin, off PATH; the newest is
// taken. The other binaries are looked up beside it.
func Tool() optional.Tool {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return optional.Tool{
		Name:       "PostgreSQL server binaries (pg_ctl)",
		Env:        "PG_CTL",
		Install:    "apt-get install postgresql (.ci/run's machine has it)",
		Candidates: append(found, "pg_ctl"),
	}
}

// version is the major version in /usr/lib/postgresql/<version>/bin/pg_ctl.
func version(pgCtl string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgCtl))))
	return v
}

// Options shape the pair.
type Options struct {
	// Synchronous makes the primary wait for the replica's flush before a
	// commit returns (synchronous_standby_names = '*'), so a failover loses
	// no acknowledged commit: what RDS Multi-AZ and Patroni's
	// synchronous_mode promise. Without it a commit may be lost with the
	// primary. The promoted replica does not inherit it (it has no standby
	// of its own to wait for).
	Synchronous bool
}

// Node is one PostgreSQL server of the pair.
type Node struct {
	Port int
	data string // its data directory
	log  string // pg_ctl's log file
}

// Pair is a primary and its streaming replica.
type Pair struct {
	Primary, Replica Node
	bin              string // the directory of pg_ctl, initdb, pg_basebackup
	dir              string // owned by the user the servers run as
	t                testing.TB
}

// Start initialises a primary, clones a replica from it with
// pg_basebackup, starts both and returns once the replica streams (and,
// with Synchronous, is the primary's synchronous standby). Cleanup stops
// both, also when Start fails half-way.
func Start(t testing.TB, opts Options) *Pair {
	t.Helper()
	pgCtl := Tool().Require(t)
	sweep()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		t.Fatalf("pgfailover: %v", err)
	}
	p := &Pair{bin: filepath.Dir(pgCtl), dir: dir, t: t}
	// The owner file lets a later run's sweep stop this pair if this
	// process dies before its cleanup.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("pgfailover: %v", err)
	}
	t.Cleanup(func() { stopAll(p.bin, dir) })
	if err := chownToServer(dir); err != nil {
		t.Fatalf("pgfailover: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p.Primary = Node{Port: freePort(t), data: filepath.Join(dir, "primary"), log: filepath.Join(dir, "primary.log")}
	p.Replica = Node{Port: freePort(t), data: filepath.Join(dir, "replica"), log: filepath.Join(dir, "replica.log")}
	if err := p.startPrimary(ctx); err != nil {
		t.Fatalf("pgfailover: primary: %v\n%s", err, p.logs())
	}
	if err := p.startReplica(ctx, opts); err != nil {
		t.Fatalf("pgfailover: replica: %v\n%s", err, p.logs())
	}
	return p
}

// URL is a multi-host URL naming both servers, which connects only to the
// one that accepts writes: the URL an app is given for a database with
// failover.
func (p *Pair) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write",
		p.Primary.Port, p.Replica.Port, database)
}

// PrimaryURL and ReplicaURL name one server each.
func (p *Pair) PrimaryURL(database string) string { return nodeURL(p.Primary, database) }

// ReplicaURL names the replica alone (reads only until it is promoted).
func (p *Pair) ReplicaURL(database string) string { return nodeURL(p.Replica, database) }

func nodeURL(n Node, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.Port, database)
}

// KillPrimary stops the primary at once (pg_ctl stop -m immediate: no
// checkpoint, every connection cut), as a crashed machine would.
func (p *Pair) KillPrimary() { p.stop(p.Primary) }

// KillReplica stops the replica the same way.
func (p *Pair) KillReplica() { p.stop(p.Replica) }

func (p *Pair) stop(n Node) {
	p.t.Helper()
	if out, err := p.run(context.Background(), "pg_ctl", "stop", "-m", "immediate", "-w", "-D", n.data); err != nil {
		p.t.Fatalf("pgfailover: stop %d: %v: %s", n.Port, err, out)
	}
}

// Promote makes the replica a primary (pg_ctl promote) and returns once it
// accepts writes.
func (p *Pair) Promote() {
	p.t.Helper()
	if out, err := p.run(context.Background(), "pg_ctl", "promote", "-w", "-t", "30", "-D", p.Replica.data); err != nil {
		p.t.Fatalf("pgfailover: promote: %v: %s\n%s", err, out, p.logs())
	}
}

// logs is both servers' log, for a failure message.
func (p *Pair) logs() string {
	var s string
	for _, n := range []Node{p.Primary, p.Replica} {
		b, _ := os.ReadFile(n.log)
		s += fmt.Sprintf("--- %s\n%s", n.log, b)
	}
	return s
}
