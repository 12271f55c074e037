package main

import (
	"os"
	"testing"
	"time"
)

// TestProcCPUCountsThisProcess: spinning for 200 ms of wall time adds CPU
// time to this process's count (at least a tenth of it, on a machine that
// may give the test little of a core), and a process that does not exist
// is an error.
func TestProcCPUCountsThisProcess(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 20*time.Millisecond {
		t.Errorf("CPU after spinning 200 ms: +%s, want ≥ 20 ms", after-before)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("procCPU of a pid that does not exist: no error")
	}
}
