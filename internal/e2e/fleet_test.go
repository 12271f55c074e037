package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestInstancesShareAHostOnDefaults: instances that differ only in HTTP_ADDR
// all serve; the ones that find the default admin port taken say so once and
// take a free loopback port instead.
func TestInstancesShareAHostOnDefaults(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["ADMIN_ADDR"] = "" // the default, as a user who never set it
	var apps []*instance
	for range 3 {
		apps = append(apps, launchApp(t, env))
	}
	fallbacks := 0
	for i, a := range apps {
		base := a.waitListening()
		if resp, _ := call(t, http.MethodGet, base+"/products/1", nil, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("instance %d: GET /products/1 = %d, want 200", i, resp.StatusCode)
		}
		if len(a.logs.records("admin listening")) != 1 {
			t.Errorf("instance %d: want one \"admin listening\" line, log:\n%s", i, a.logs)
		}
		fallbacks += len(a.logs.records("admin: default address busy, using a free loopback port"))
	}
	// At most one instance can hold the default port (none if something
	// else on this machine does).
	if fallbacks < len(apps)-1 {
		t.Errorf("%d instances fell back to a free admin port, want at least %d", fallbacks, len(apps)-1)
	}
}

// TestExplicitBusyAdminAddrFails: an address the user chose must be free;
// silently moving it would hide a mistake.
func TestExplicitBusyAdminAddrFails(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env := testEnv(t)
	env["ADMIN_ADDR"] = busy.Addr().String()
	env["HTTP_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = run(ctx, envOf(env), &logCapture{})
	if err == nil || !strings.Contains(err.Error(), "admin listen "+busy.Addr().String()) || !strings.Contains(err.Error(), "ADMIN_ADDR") {
		t.Fatalf("run with a busy ADMIN_ADDR: got %v, want an admin listen error naming ADMIN_ADDR", err)
	}
}

// TestBusyHTTPAddrFailsFast: the HTTP port is bound before the database and
// migrations, so a busy one fails in milliseconds even with the database
// unreachable.
func TestBusyHTTPAddrFailsFast(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env := map[string]string{
		"HTTP_ADDR":    busy.Addr().String(),
		"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5",
	}
	start := time.Now()
	err = run(context.Background(), envOf(env), &logCapture{})
	if err == nil || !strings.Contains(err.Error(), "listen "+busy.Addr().String()) || !strings.Contains(err.Error(), "HTTP_ADDR") {
		t.Fatalf("run: got %v, want a listen error naming HTTP_ADDR", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("busy HTTP_ADDR reported after %s, want before any database work", took)
	}
}

// TestReadinessWaitsForWarmUp: while HOT_KEYS are loaded (slowly, over a
// delayed database link) the instance is alive but not ready; it turns ready
// once they are in the cache, and the hot keys are then hits.
func TestReadinessWaitsForWarmUp(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	link := proxyDatabase(t, env)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	env["HTTP_ADDR"] = addr
	env["HOT_KEYS"] = "901,902,903,904,905,906,907,908"
	a := launchApp(t, env)
	base := "http://" + addr
	var sawWarming bool
	if !dbtest.Eventually(listenWait, func() bool {
		link.SetDelay(150 * time.Millisecond) // warm-up takes a while
		resp, _, err := send(http.MethodGet, base+"/readyz", nil, "")
		if err != nil {
			return false
		}
		if resp.StatusCode == http.StatusServiceUnavailable && len(a.logs.records("warm-up done")) == 0 {
			if live, _, err := send(http.MethodGet, base+"/healthz", nil, ""); err == nil && live.StatusCode == http.StatusOK {
				sawWarming = true
			}
		}
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("never ready\n%s", a.logs)
	}
	link.SetDelay(0)
	if !sawWarming {
		t.Errorf("never saw /readyz 503 with /healthz 200 during warm-up")
	}
	if len(a.logs.records("warm-up done")) != 1 {
		t.Errorf("ready before warm-up was done")
	}
	if resp, _ := call(t, http.MethodGet, base+"/products/905", nil, ""); resp.Header.Get("X-Cache") != "HIT" {
		t.Errorf("hot key after ready: X-Cache %q, want HIT", resp.Header.Get("X-Cache"))
	}
}
