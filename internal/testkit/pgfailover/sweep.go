package pgfailover

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ownerFile holds the pid of the test process that made a pair's
// directory.
const ownerFile = "owner.pid"

// stopAll stops every server whose data directory is in dir (pg_ctl stop
// -m immediate, then SIGKILL to a postmaster still alive) and removes dir.
// It is the pair's cleanup, on success and failure alike.
func stopAll(bin, dir string) {
	for _, name := range []string{"primary", "replica"} {
		data := filepath.Join(dir, name)
		pid := postmasterPID(data)
		if pid == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, _ = runIn(ctx, bin, dir, "pg_ctl", "stop", "-m", "immediate", "-w", "-D", data)
		cancel()
		if !Gone(pid, 5*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = os.RemoveAll(dir)
}

// Gone waits up to within for process pid to end and reports whether it
// did. A zombie counts as ended: its parent (init, after pg_ctl exits)
// reaps it in its own time.
func Gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
		// The state follows the command name in parentheses.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// postmasterPID is the first line of data/postmaster.pid (absent once the
// server has stopped cleanly), or 0.
func postmasterPID(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// sweep stops the pairs of test processes that died before their cleanup
// ran (a SIGKILLed or timed-out `go test`): without it their servers
// would run, and hold ports and memory, until the machine restarts. A
// directory whose owner still runs is another test's and is left alone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // being made right now, or not ours
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || owner <= 0 || syscall.Kill(owner, 0) != syscall.ESRCH {
			continue
		}
		bin := ""
		if found := Tool().Lookup(); found != "" {
			bin = filepath.Dir(found)
		}
		stopAll(bin, dir)
	}
}
