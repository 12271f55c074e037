package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// Layered timeouts of these tests (loadConfig checks the layering):
// statement 500ms < lock TTL 2s; acquire 300ms + statement 500ms ≤ request
// 1s; lock wait 300ms < request 1s.
const (
	deadlineRequest  = time.Second
	deadlineLockWait = 300 * time.Millisecond
	deadlineSlack    = 500 * time.Millisecond // scheduling under -race; logical, not a benchmark
)

func deadlineEnv(t *testing.T) map[string]string {
	return testEnv(t, map[string]string{
		"REQUEST_TIMEOUT": "1s", "DB_ACQUIRE_TIMEOUT": "300ms", "DB_STATEMENT_TIMEOUT": "500ms",
		"LOCK_WAIT": "300ms", "LOCK_TTL": "2s", "CACHE_MODE": "lock", "RATE_LIMIT": "off",
	})
}

// TestDeadlineSlowQueryEnds: a query stuck behind a table lock is ended by
// the timeouts (statement_timeout, at worst the request deadline) and the
// client gets 503/504 — the request never hangs on the database.
func TestDeadlineSlowQueryEnds(t *testing.T) {
	t.Parallel()
	env := deadlineEnv(t)
	id := productID(t)
	base, _ := startAppFilterLoaded(t, env)
	_, release := lockTable(t, env["DATABASE_URL"], "products")

	a := timedGet(fmt.Sprintf("%s/products/%d", base, id))
	release()
	if a.err != nil {
		t.Fatalf("GET with the table locked: %v", a.err)
	}
	t.Logf("table locked: %d after %s", a.status, a.elapsed)
	if a.status != http.StatusServiceUnavailable && a.status != http.StatusGatewayTimeout {
		t.Errorf("status with the table locked: got %d, want 503 or 504", a.status)
	}
	// Without the timeouts it would wait for the lock, released only after
	// it answers: any bound well short of the client's own timeout proves
	// it. Beside four CPU burners the client's side alone once added 0.5 s
	// to a server that answered in 1.006 s, so this bound is looser than
	// deadlineSlack.
	if limit := deadlineRequest + 4*deadlineSlack; a.elapsed >= limit {
		t.Errorf("answered after %s, want < %s (REQUEST_TIMEOUT + slack)", a.elapsed, limit)
	}
	// It did wait for the database (it was stopped by a timeout, not by
	// something failing at once): at least most of the shortest timeout
	// that can end it. That is the lock timeout (0.45 × the 500ms
	// statement timeout: 225ms) on a warm connection, or the acquire
	// timeout (300ms) while the pool's first connection is still being
	// made: its prepare waits behind the same table lock (seen beside four
	// CPU burners, the request arriving before the start's warm
	// connections were up).
	if a.elapsed < 200*time.Millisecond {
		t.Errorf("answered after %s, want ≥ 200ms (the 225ms lock, 300ms acquire or 500ms statement timeout)", a.elapsed)
	}
	if a := timedGet(fmt.Sprintf("%s/products/%d", base, id)); a.status != http.StatusOK {
		t.Errorf("GET after the lock is released: got %d (%v), want 200", a.status, a.err)
	}
}

// TestDeadlineLockWaitEnds: another instance holds the product's Redis lock
// and never stores the value; a waiter gives up after LOCK_WAIT with 503 +
// Retry-After, instead of waiting for the lock's TTL.
func TestDeadlineLockWaitEnds(t *testing.T) {
	t.Parallel()
	env := deadlineEnv(t)
	id := productID(t)
	base, _ := startApp(t, env)
	rdb := dbtest.NewRedis(t, redisDB)
	lock := nsKey(env, "lock:"+repo.Key(id))
	ok, err := rdb.SetNX(context.Background(), lock, "held-by-the-test", 5*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("SET %s NX PX 5000: got %v (%v), want it set", lock, ok, err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), lock) })

	a := timedGet(fmt.Sprintf("%s/products/%d", base, id))
	if a.err != nil {
		t.Fatalf("GET with the lock held: %v", a.err)
	}
	t.Logf("lock held: %d Retry-After %q after %s", a.status, a.header.Get("Retry-After"), a.elapsed)
	ra, _ := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != http.StatusServiceUnavailable || ra < 1 {
		t.Errorf("GET with the lock held: got %d Retry-After %q, want 503 with Retry-After ≥ 1", a.status, a.header.Get("Retry-After"))
	}
	if a.elapsed < deadlineLockWait || a.elapsed >= deadlineLockWait+deadlineSlack {
		t.Errorf("answered after %s, want in [%s, %s) (LOCK_WAIT, + slack)", a.elapsed, deadlineLockWait, deadlineLockWait+deadlineSlack)
	}
	if ttl := rdb.PTTL(context.Background(), lock).Val(); ttl <= 0 {
		t.Errorf("the other holder's lock: PTTL %s, want it untouched (still set)", ttl)
	}
}
