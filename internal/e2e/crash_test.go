package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestLockHolderCrash: the instance holding a cold key's lock dies with
// SIGKILL mid-load while the database link is slow. The other instances'
// waiters outlive its lock, one of them takes it over, and they answer with
// the value: at least 95 of 100, each within REQUEST_TIMEOUT as the apps
// timed it, at most two queries
// in all (the dead holder's and the takeover), no lock key left.
func TestLockHolderCrash(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	dbURL, err := url.Parse(env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	link, queries := dbtest.NewPGProxy(t, dbURL.Host)
	dbURL.Host = link.Addr()
	ns := env["CACHE_NAMESPACE"]
	for k, v := range map[string]string{
		"DATABASE_URL": dbURL.String(), "ADMIN_ADDR": "off",
		"LOCK_TTL": "2s", "LOCK_WAIT": "6s", "REQUEST_TIMEOUT": "8s", "DB_STATEMENT_TIMEOUT": "1900ms",
	} {
		env[k] = v
	}
	id := productID(t)
	holder, cmd := startChild(t, env) // migrates the database
	want := productName(t, env["DATABASE_URL"], id)
	apps := []*instance{launchApp(t, env), launchApp(t, env)}
	others := []string{apps[0].waitListening(), apps[1].waitListening()}
	// The unknown-id filter loads in the background: slowed by the delay
	// below, its query would hold a pooled connection the waiters need.
	for _, a := range apps {
		a.waitFilterLoaded()
	}

	link.SetDelay(time.Second)
	before := queries.Load()
	go func() { _, _, _ = send(http.MethodGet, fmt.Sprintf("%s/products/%d", holder, id), nil, "") }()
	rdb := dbtest.NewRedis(t, redisDB)
	lockKey := ns + ":lock:" + repo.Key(id)
	if !dbtest.Eventually(5*time.Second, func() bool { return rdb.Exists(context.Background(), lockKey).Val() == 1 }) {
		t.Fatalf("the holder never took %s", lockKey)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill holder: %v", err)
	}

	var ok, wrong atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 100 {
		wg.Go(func() {
			resp, body, err := send(http.MethodGet, fmt.Sprintf("%s/products/%d", others[i%2], id), nil, "")
			switch {
			case err != nil || resp.StatusCode != http.StatusOK:
			case json.Valid(body) && jsonField(body, "name") == want:
				ok.Add(1)
			default:
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if ok.Load() < 95 || wrong.Load() > 0 {
		t.Errorf("%d/100 answered 200 with the product (%d with a wrong body) in %s, want ≥ 95 and none wrong", ok.Load(), wrong.Load(), took)
	}
	// Each answer within REQUEST_TIMEOUT, as the apps timed it (their
	// request log): the client's wall clock also counts the time before a
	// request reaches an app, which a starved machine stretches (9.2 s in
	// CI beside four CPU burners, every request handled within 6.1 s), so
	// it only guards against a hang.
	handled := func() (n, late int, worst float64) {
		for _, a := range apps {
			for _, rec := range a.logs.records("request") {
				if rec["route"] == "/products/:id" {
					n++
					d, _ := rec["duration_ms"].(float64)
					worst = max(worst, d)
					if d > 8000 {
						late++
					}
				}
			}
		}
		return n, late, worst
	}
	dbtest.Eventually(5*time.Second, func() bool { n, _, _ := handled(); return n >= 100 })
	if n, late, worst := handled(); n != 100 || late > 0 {
		t.Errorf("the apps logged %d of 100 reads, %d of them past REQUEST_TIMEOUT (8s), the slowest in %.0f ms", n, late, worst)
	}
	if took > 2*8*time.Second {
		t.Errorf("answers took %s, want well within twice REQUEST_TIMEOUT (8s): a wait outlived its deadline", took)
	}
	if q := queries.Load() - before; q > 2 {
		t.Errorf("%d queries reached PostgreSQL, want at most 2 (the dead holder's and one takeover)", q)
	}
	if left := rdb.Keys(context.Background(), ns+":lock:*").Val(); len(left) > 0 {
		t.Errorf("lock keys left: %v", left)
	}
	t.Logf("%d/100 answered in %s with %d queries", ok.Load(), took, queries.Load()-before)
}

func productName(t *testing.T, dbURL string, id int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := dbConn(t, dbURL)
	var name string
	if err := conn.QueryRow(ctx, "SELECT name FROM products WHERE id = $1", id).Scan(&name); err != nil {
		t.Fatalf("product %d: %v", id, err)
	}
	return name
}

func jsonField(body []byte, name string) any {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return m[name]
}
