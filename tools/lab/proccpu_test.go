package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcCPUCountsThisProcess: the CPU /proc counts for this process
// grows by what getrusage says a spin cost, and a process that does not
// exist is an error.
func TestProcCPUCountsThisProcess(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel's own account (getrusage) shows 100 ms of CPU,
	// not for a wall time: beside four CPU burners 200 ms of wall time
	// bought this process 10 ms of CPU.
	start := rusageCPU(t)
	for deadline := time.Now().Add(30 * time.Second); rusageCPU(t)-start < 100*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("not 100 ms of CPU within 30 s")
		}
	}
	spun := rusageCPU(t) - start
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in clock ticks (10 ms): allow two of them either way.
	if got := after - before; got < spun-20*time.Millisecond || got > spun+200*time.Millisecond {
		t.Errorf("CPU from /proc over a spin of %s (getrusage): +%s", spun, got)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("procCPU of a pid that does not exist: no error")
	}
}

// rusageCPU is this process's user + system CPU as getrusage reports it.
func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
