package e2e

import (
	"testing"
	"time"
)

// TestShutdownDrainDelay: after SIGTERM (ctx cancelled) the app keeps
// serving for SHUTDOWN_DRAIN_DELAY while /readyz says 503, so a load
// balancer can take it out of rotation before the listener closes.
func TestShutdownDrainDelay(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["SHUTDOWN_DRAIN_DELAY"] = "1500ms"
	a := launchApp(t, env)
	base := a.waitListening()

	a.cancel()
	time.Sleep(200 * time.Millisecond)
	resp, _, err := send("GET", base+"/readyz", nil, "")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("/readyz during the drain delay: got %v, %v, want 503", resp, err)
	}
	resp, _, err = send("GET", base+"/products/22", nil, "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET during the drain delay: got %v, %v, want 200 (still serving)", resp, err)
	}
	select {
	case <-a.exited:
		t.Fatal("run returned during the drain delay")
	default:
	}
	if err := a.stop(); err != nil {
		t.Fatalf("run: got %v, want nil", err)
	}
}
