package pgfailover

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// serverUser is who the servers run as when the tests run as root.
const serverUser = "postgres"

// startPrimary runs initdb (trust on loopback, replication allowed) and
// starts the primary.
func (p *Pair) startPrimary(ctx context.Context) error {
	out, err := p.run(ctx, "initdb", "-D", p.Primary.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	// fsync off: the tests kill processes, never the machine, so the page
	// cache survives every crash they stage.
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 4
wal_keep_size = '64MB'
shared_buffers = '16MB'
fsync = off
`, p.Primary.Port, p.dir)
	if err := appendAs(filepath.Join(p.Primary.data, "postgresql.conf"), conf); err != nil {
		return err
	}
	return p.startNode(ctx, &p.Primary)
}

// startReplica clones the primary (pg_basebackup -R writes standby.signal
// and primary_conninfo), starts it on its own port and waits until it
// streams; with opts.Synchronous the primary then waits for it on commit.
func (p *Pair) startReplica(ctx context.Context, opts Options) error {
	out, err := p.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Primary.Port),
		"-U", "postgres", "-D", p.Replica.data, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	if err != nil {
		return fmt.Errorf("pg_basebackup: %w: %s", err, out)
	}
	if err := appendAs(filepath.Join(p.Replica.data, "postgresql.conf"), fmt.Sprintf("\nport = %d\n", p.Replica.Port)); err != nil {
		return err
	}
	if err := p.startNode(ctx, &p.Replica); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, p.PrimaryURL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	want := "streaming"
	if opts.Synchronous {
		// Set after the base backup, so the replica's copy of the
		// configuration does not make the promoted replica wait for a
		// standby it will never have.
		if _, err := conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '*'"); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return err
		}
		want = "sync"
	}
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication
			WHERE state = 'streaming' AND ($1 = 'streaming' OR sync_state = 'sync')`, want).Scan(&n)
		if err == nil && n == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica not %s: %w (last: %v, %d)", want, ctx.Err(), err, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startNode starts one server with pg_ctl -w (it returns once the server
// accepts connections). The log file keeps the server off pg_ctl's
// output, which run waits on.
//
// The port was free when freePorts chose it, but between that and the
// server's bind (initdb, a base backup: seconds) another process may take
// it, often as the source port of an outgoing connection from the tests
// running beside this one (seen beside four CPU burners). The server then
// stops with "Address already in use": the node moves to a new free port
// (the last `port` line of postgresql.conf wins) and starts again.
func (p *Pair) startNode(ctx context.Context, n *Node) error {
	for attempt := 1; ; attempt++ {
		out, err := p.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", n.data, "-l", n.log)
		if err == nil {
			return nil
		}
		if attempt == portAttempts || !portTaken(n.log) {
			return fmt.Errorf("pg_ctl start %d: %w: %s", n.Port, err, out)
		}
		ports, perr := freePorts(1)
		if perr != nil {
			return perr
		}
		n.Port = ports[0]
		if err := appendAs(filepath.Join(n.data, "postgresql.conf"), fmt.Sprintf("\nport = %d\n", n.Port)); err != nil {
			return err
		}
	}
}

// portAttempts bounds how often a node moves to another port.
const portAttempts = 3

// portTaken reports whether the server's log says its port was taken.
func portTaken(log string) bool {
	b, err := os.ReadFile(log)
	return err == nil && strings.Contains(string(b), "Address already in use")
}

// run runs one of the PostgreSQL binaries, as serverUser when this process
// is root, in the pair's directory (the server user may not read the
// test's working directory).
func (p *Pair) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return runIn(ctx, p.bin, p.dir, name, args...)
}

func runIn(ctx context.Context, bin, dir, name string, args ...string) ([]byte, error) {
	path := filepath.Join(bin, name)
	cmd := exec.CommandContext(ctx, path, args...)
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", serverUser, "--", path}, args...)...)
	}
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// appendAs appends s to a server's configuration file (written by the
// server user; root may append to it and ownership stays).
func appendAs(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// chownToServer gives dir to serverUser when this process is root, so
// initdb (run as that user) can create the data directories in it.
func chownToServer(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	out, err := exec.Command("chown", serverUser+":", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown %s: %w: %s", dir, err, out)
	}
	return nil
}

// freePorts finds n distinct free loopback ports (held open together, so
// the two servers never get the same one).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
