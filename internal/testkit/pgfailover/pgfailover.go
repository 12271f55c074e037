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
	"errors"
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
	bin              string     // the directory of pg_ctl, initdb, pg_basebackup
	dir              string     // owned by the user the servers run as
	t                testing.TB // the test of a pair made by Start; nil after Launch
}

// Start initialises a primary, clones a replica from it with
// pg_basebackup, starts both and returns once the replica streams (and,
// with Synchronous, is the primary's synchronous standby). Without the
// binaries the test is left out (optional.Tool); cleanup stops both, also
// when Start fails half-way.
func Start(t testing.TB, opts Options) *Pair {
	t.Helper()
	Tool().Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := Launch(ctx, opts)
	if p != nil {
		t.Cleanup(p.Close)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.t = t
	return p
}

// Launch is Start for a program that is not a test (tools/lab): it
// returns an error where Start fails the test, and the caller must Close
// the pair it returns, also with an error (a pair half started).
func Launch(ctx context.Context, opts Options) (*Pair, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, fmt.Errorf("pgfailover: %w", err)
	}
	return launch(ctx, opts, ports)
}

// launch starts the pair with the primary on ports[0] and the replica on
// ports[1] (each moves on if its port is taken by then: startNode).
func launch(ctx context.Context, opts Options, ports []int) (*Pair, error) {
	pgCtl := Tool().Lookup()
	if pgCtl == "" {
		return nil, errors.New("pgfailover: no PostgreSQL server binaries (pg_ctl) under /usr/lib/postgresql/*/bin or on PATH; set PG_CTL")
	}
	sweep()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgfailover: %w", err)
	}
	p := &Pair{bin: filepath.Dir(pgCtl), dir: dir}
	// The owner file lets a later run's sweep stop this pair if this
	// process dies before its cleanup.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return p, fmt.Errorf("pgfailover: %w", err)
	}
	if err := chownToServer(dir); err != nil {
		return p, fmt.Errorf("pgfailover: %w", err)
	}
	p.Primary = Node{Port: ports[0], data: filepath.Join(dir, "primary"), log: filepath.Join(dir, "primary.log")}
	p.Replica = Node{Port: ports[1], data: filepath.Join(dir, "replica"), log: filepath.Join(dir, "replica.log")}
	if err := p.startPrimary(ctx); err != nil {
		return p, fmt.Errorf("pgfailover: primary: %w\n%s", err, p.logs())
	}
	if err := p.startReplica(ctx, opts); err != nil {
		return p, fmt.Errorf("pgfailover: replica: %w\n%s", err, p.logs())
	}
	return p, nil
}

// Close stops both servers and removes their directory; Start's cleanup.
func (p *Pair) Close() { stopAll(p.bin, p.dir) }

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
func (p *Pair) KillPrimary() { p.must(p.Stop(context.Background(), p.Primary)) }

// KillReplica stops the replica the same way.
func (p *Pair) KillReplica() { p.must(p.Stop(context.Background(), p.Replica)) }

// Promote makes the replica a primary and returns once it accepts writes.
func (p *Pair) Promote() { p.must(p.PromoteReplica(context.Background())) }

// Stop stops node n at once (pg_ctl stop -m immediate), as a crash would.
func (p *Pair) Stop(ctx context.Context, n Node) error {
	if out, err := p.run(ctx, "pg_ctl", "stop", "-m", "immediate", "-w", "-D", n.data); err != nil {
		return fmt.Errorf("pgfailover: stop %d: %w: %s", n.Port, err, out)
	}
	return nil
}

// PromoteReplica makes the replica a primary (pg_ctl promote) and returns
// once it accepts writes.
func (p *Pair) PromoteReplica(ctx context.Context) error {
	if out, err := p.run(ctx, "pg_ctl", "promote", "-w", "-t", "30", "-D", p.Replica.data); err != nil {
		return fmt.Errorf("pgfailover: promote: %w: %s\n%s", err, out, p.logs())
	}
	return nil
}

// must fails the test of a pair made by Start on err.
func (p *Pair) must(err error) {
	if err == nil {
		return
	}
	if p.t == nil {
		panic(err) // a Launched pair's caller uses Stop and PromoteReplica
	}
	p.t.Helper()
	p.t.Fatal(err)
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
