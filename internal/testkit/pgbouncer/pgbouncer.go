// Package pgbouncer starts a local PgBouncer (Debian's pgbouncer package)
// in transaction pooling in front of the test PostgreSQL, for tests that
// must prove the app works behind it. Each call starts its own on a free
// loopback port and stops it when the test ends.
package pgbouncer

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/optional"
)

// Tool is PgBouncer as an optional program: Debian's package puts it in
// /usr/sbin, off a normal user's PATH.
func Tool() optional.Tool {
	return optional.Tool{
		Name:       "pgbouncer",
		Env:        "PGBOUNCER_BIN",
		Install:    "apt-get install pgbouncer (.ci/run does)",
		Candidates: []string{"pgbouncer", "/usr/sbin/pgbouncer"},
	}
}

// Start runs PgBouncer (pool_mode = transaction) in front of the server of
// pgURL and returns pgURL rewritten to go through it. Without a pgbouncer
// binary the test fails when CI=true and is otherwise left out, named
// (optional.Tool.Require).
func Start(t testing.TB, pgURL string) string {
	t.Helper()
	bin := Tool().Require(t)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatalf("pgbouncer: parse %s: %v", pgURL, err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	dir, err := os.MkdirTemp("", "pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	listen := freePort(t)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 10
ignore_startup_parameters = extra_float_digits
pidfile = %s
logfile = %s
`, host, port, listen, filepath.Join(dir, "userlist.txt"), filepath.Join(dir, "pgbouncer.pid"), filepath.Join(dir, "pgbouncer.log"))
	if tracksPrepared(t, bin) {
		// Off, as on the PgBouncers before 1.21 (which refuse the key): every
		// test sees a pooler that does not keep prepared statements apart,
		// whatever the version, and the app must cope or refuse at start.
		ini += "max_prepared_statements = 0\n"
	}
	userName := u.User.Username()
	if userName == "" {
		userName = "postgres"
	}
	write(t, filepath.Join(dir, "pgbouncer.ini"), ini)
	// auth_type = trust lets the tests in; the password (if the URL has one)
	// is what PgBouncer logs in to the server with, as a server that is not
	// set to trust (CI's PostgreSQL container) asks for one.
	password, _ := u.User.Password()
	write(t, filepath.Join(dir, "userlist.txt"), fmt.Sprintf("%q %q\n", userName, password))
	args := []string{"-d"}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		runAs := "postgres"
		chownAll(t, dir, runAs)
		args = append(args, "-u", runAs)
	}
	out, err := exec.Command(bin, append(args, filepath.Join(dir, "pgbouncer.ini"))...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbouncer: start: %v: %s", err, out)
	}
	t.Cleanup(func() { stop(dir) })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgbouncer: not listening on %s within 10 s: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	u.Host = addr
	return u.String()
}

// stop ends the PgBouncer whose pid file is in dir.
func stop(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "pgbouncer.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chownAll gives dir and its files to name, the user PgBouncer runs as.
func chownAll(t testing.TB, dir, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("pgbouncer: user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, gid)
	})
	if err != nil {
		t.Fatalf("pgbouncer: chown %s: %v", dir, err)
	}
}

// tracksPrepared reports a PgBouncer of 1.21 or later, which can keep
// protocol-level prepared statements apart (max_prepared_statements).
func tracksPrepared(t testing.TB, bin string) bool {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("pgbouncer --version: %v", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "PgBouncer %d.%d", &major, &minor); err != nil {
		t.Fatalf("pgbouncer --version: %q: %v", out, err)
	}
	return major > 1 || major == 1 && minor >= 21
}
